/**
 * `/v1/runs` figures on the default sandbox, in-process (`app.request`): the 202 of
 * `POST /v1/runs`, a run from `POST` to its `end` event, `GET /v1/runs/:id` on a full table,
 * the replay of a run's whole 1 MiB event buffer to a late client (time and the host's
 * largest event-loop delay meanwhile, next to the idle host's: on a shared machine that
 * figure is mostly noise), one synchronous replay step alone, and the heap one ended run
 * keeps in the table.
 * Run: `node --import tsx bench/http-runs.bench.ts`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createSandboxRuntime } from '../platforms/node/index.js'
import { createSessionLogHub, createToolsApp, runsHeld } from '../src/http/index.js'
import { createToolRuntime } from '../src/registry/index.js'
import { defineTool } from '../src/schema/define-tool.js'
import { createRunEventLog } from '../src/durable/run-table.js'
import { summarize } from './_stats.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const TOKEN = 'bench-token-0123456789abcdef'
const hub = createSessionLogHub()
const codeRuntime = createSandboxRuntime()
const runtime = createToolRuntime({ mode: 'both', codeRuntime, sessionLog: hub })
runtime.register(
  defineTool({
    name: 'echo',
    description: 'Echo the text back.',
    parameters: { text: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: (args) => args.text,
    isConcurrencySafe: () => true,
  }),
)
const app = createToolsApp(runtime, { token: TOKEN })
const auth = { Authorization: `Bearer ${TOKEN}` }
const json = { ...auth, 'Content-Type': 'application/json' }

const start = async (code: string): Promise<string> => {
  const response = await app.request('/v1/runs', { method: 'POST', headers: json, body: JSON.stringify({ code, description: 'bench' }) })
  if (response.status !== 202) throw new Error(`POST /v1/runs answered ${response.status}: ${await response.text()}`)
  return ((await response.json()) as { id: string }).id
}
/** Reads a run's events to the end, chunk by chunk (a `.text()` would add its own 1 MiB decode to the host's delay), and returns the bytes read. */
const events = async (id: string): Promise<number> => {
  const reader = (await app.request(`/v1/runs/${id}/events`, { headers: auth })).body!.getReader()
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return bytes
    bytes += value.byteLength
  }
}
const ms = (value: number): string => `${value.toFixed(2)} ms`

// Warm-up: threads, VMs, code paths.
for (let i = 0; i < 20; i++) await events(await start('return 1'))

const accepted: number[] = []
const toEnd: number[] = []
for (let i = 0; i < 100; i++) {
  const t0 = performance.now()
  const id = await start('return 1')
  accepted.push(performance.now() - t0)
  await events(id)
  toEnd.push(performance.now() - t0)
}
const a = summarize(accepted)
const e = summarize(toEnd)
console.log(`POST /v1/runs → 202                 median ${ms(a.median)}  p95 ${ms(a.p95)}  (n=${a.n})`)
console.log(`POST → end event (return 1)          median ${ms(e.median)}  p95 ${ms(e.p95)}`)

// Fill the table to its 256 runs, then look one up.
const ids: string[] = []
for (let i = 0; i < 256; i++) {
  ids.push(await start('return 1'))
  await events(ids.at(-1)!)
}
const lookups: number[] = []
for (let i = 0; i < 1000; i++) {
  const t0 = performance.now()
  await (await app.request(`/v1/runs/${ids[i % ids.length]}`, { headers: auth })).arrayBuffer()
  lookups.push(performance.now() - t0)
}
const g = summarize(lookups)
console.log(`GET /v1/runs/:id (256 runs kept)     median ${ms(g.median)}  p95 ${ms(g.p95)}`)

// A run whose buffer is full (1 MiB of dispatch frames), replayed whole to a late client.
const big = await start(`for (let i = 0; i < 600; i++) await tools.echo({ text: String(i).padEnd(1000, '.') }); return 'ok'`)
await events(big)
const held = ((await (await app.request(`/v1/runs/${big}`, { headers: auth })).json()) as { events: { first: number; last: number; dropped: number } }).events
// The machine's own noise, for comparison: the largest delay while the host does nothing.
const idle = monitorEventLoopDelay({ resolution: 1 })
idle.enable()
await new Promise((resolve) => setTimeout(resolve, 1000))
idle.disable()
console.log(`idle host, max event-loop delay over 1 s  ${ms(idle.max / 1e6)}`)
for (let i = 0; i < 5; i++) await events(big) // warm-up
const delay = monitorEventLoopDelay({ resolution: 1 })
const replays: number[] = []
let bytes = 0
delay.enable()
for (let i = 0; i < 20; i++) {
  const t0 = performance.now()
  bytes = await events(big)
  replays.push(performance.now() - t0)
}
delay.disable()
const r = summarize(replays)
console.log(`replay of a full buffer (${(bytes / 1024).toFixed(0)} KiB, frames ${held.first}–${held.last}, ${held.dropped} dropped)  median ${ms(r.median)}  p95 ${ms(r.p95)}  event-loop delay p99 ${ms(delay.percentile(99) / 1e6)}, max ${ms(delay.max / 1e6)}`)

// One synchronous step of a replay, alone: a batch of at most 128 KiB of frames read from a
// full 1 MiB buffer and encoded, as the stream's writer does (the rest waits for the client).
const log = createRunEventLog(1024 * 1024)
const frame = { type: 'tool/code-dispatch', name: 'echo', arguments: { text: '.'.repeat(1000) }, isError: false, content: [{ type: 'text', text: '.'.repeat(1000) }] }
for (let i = 0; i < 2000; i++) log.append('dispatch', frame)
const encoder = new TextEncoder()
const steps: number[] = []
for (let i = 0; i < 200; i++) {
  const t0 = performance.now()
  for (const { text } of log.since(log.first - 1 + (i % 100), 128 * 1024).frames) encoder.encode(text)
  steps.push(performance.now() - t0)
}
const st = summarize(steps)
console.log(`one replay step (128 KiB of frames)  median ${ms(st.median)}  p95 ${ms(st.p95)}`)

// Heap one ended small run keeps (its frames, its result, its record).
const fresh = createToolsApp(runtime, { token: TOKEN, runs: { maxRuns: 10_000 } })
gc()
gc()
const before = process.memoryUsage().heapUsed
for (let i = 0; i < 500; i++) {
  const response = await fresh.request('/v1/runs', { method: 'POST', headers: json, body: JSON.stringify({ code: 'return 1', description: 'bench' }) })
  const { id } = (await response.json()) as { id: string }
  await (await fresh.request(`/v1/runs/${id}/events`, { headers: auth })).text()
}
gc()
gc()
const perRun = (process.memoryUsage().heapUsed - before) / 500
console.log(`heap per ended run kept (return 1)   ${(perRun / 1024).toFixed(1)} KiB  (table counts ${(runsHeld(fresh)!.bytes / 500).toFixed(0)} bytes of frames and result per run)`)

await codeRuntime.dispose()
