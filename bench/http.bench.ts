/**
 * HTTP figures: one direct execution over loopback HTTP against the same call made
 * in-process with `execute()`, and the local server's throughput under a bounded
 * concurrent load. Run: `npx tsx bench/http.bench.ts`.
 */
import { serve } from '../platforms/node/index.js'
import { createToolsApp } from '../src/http/index.js'
import { createToolRuntime } from '../src/registry/index.js'
import { defineTool } from '../src/schema/define-tool.js'

const TOKEN = 'bench-token-0123456789abcdef'
const runtime = createToolRuntime()
runtime.register(
  defineTool({
    name: 'echo',
    description: 'Echo the text back.',
    parameters: { text: { type: 'string', required: true } },
    output: {
      schema: { type: 'object', properties: { text: { type: 'string', required: true } }, additionalProperties: false },
      render: (_args, value) => [{ type: 'text', text: value.text }],
    },
    execute: (args) => ({ text: args.text }),
  }),
)
const app = createToolsApp(runtime, { token: TOKEN })
const server = await serve(app, { port: 0 })
const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }
const body = JSON.stringify({ arguments: { text: 'hello' } })

function stats(samples: number[]): { p50: number; p95: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
  return { p50: at(0.5), p95: at(0.95) }
}

async function measure(label: string, iterations: number, warmup: number, op: () => Promise<unknown>): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < warmup; i++) await op()
  const samples: number[] = []
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    await op()
    samples.push(performance.now() - start)
  }
  const s = stats(samples)
  console.log(`${label.padEnd(44)} p50 ${(s.p50 * 1000).toFixed(1).padStart(8)} µs   p95 ${(s.p95 * 1000).toFixed(1).padStart(8)} µs`)
  return s
}

console.log(`toolyard HTTP bench (Node ${process.version})\n`)
const inProcess = await measure('in-process execute() (echo)', 3000, 500, () =>
  runtime.execute({ callId: 'b', name: 'echo', arguments: { text: 'hello' }, signal: new AbortController().signal }),
)
const overHttp = await measure('HTTP POST /v1/tools/echo/execute (loopback)', 1000, 200, async () => {
  const response = await fetch(`${server.url}/v1/tools/echo/execute`, { method: 'POST', headers, body })
  await response.arrayBuffer()
})
const viaAppRequest = await measure('app.request() (no socket)', 2000, 200, async () => {
  const response = await app.request('/v1/tools/echo/execute', { method: 'POST', headers, body })
  await response.arrayBuffer()
})
console.log(`\nHTTP round trip / in-process: ${(overHttp.p50 / inProcess.p50).toFixed(1)}× (p50); app.request / in-process: ${(viaAppRequest.p50 / inProcess.p50).toFixed(1)}×`)

// Bounded load: `concurrency` clients issuing mixed requests until `total` are done.
async function load(total: number, concurrency: number): Promise<void> {
  let issued = 0
  let failures = 0
  const client = async (): Promise<void> => {
    while (issued < total) {
      const i = issued++
      const response =
        i % 2 === 0
          ? await fetch(`${server.url}/v1/tools/echo/execute`, { method: 'POST', headers, body })
          : await fetch(`${server.url}/v1/tools`, { headers })
      await response.arrayBuffer()
      if (response.status !== 200) failures++
    }
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: concurrency }, client))
  const seconds = (performance.now() - start) / 1000
  console.log(`load: ${total} mixed requests, ${concurrency} concurrent: ${(total / seconds).toFixed(0)} req/s, ${failures} failures`)
}
console.log('')
await load(1000, 10)
await load(4000, 50)
await load(4000, 200)

await server.close()
await runtime.dispose()
