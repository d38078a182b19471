/**
 * HTTP figures: one direct execution over loopback HTTP against the same call made
 * in-process with `execute()`, the local server's throughput under a bounded concurrent
 * load, and the host's stall (max event-loop delay) while it answers an MCP batch at the
 * caps and while a stream client stops reading a run that floods it (issue 19; target
 * ≤ 20 ms each). Run: `npm run bench -- http`; `BENCH_ONLY=mcp npx tsx bench/http.bench.ts`
 * only the MCP rows; `BASELINE=<git ref>` adds each MCP row for that ref's src/mcp/server.ts.
 */
import { spawn } from 'node:child_process'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createSandboxRuntime, serve } from '../platforms/node/index.js'
import { createSessionLogHub, createToolsApp } from '../src/http/index.js'
import { createMcpApp } from '../src/mcp/index.js'
import { importAs, sourceAt, swapFunction } from './_baseline.js'
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
// BENCH_ONLY=mcp: only the idle line and the MCP batch stalls.
const ONLY_MCP = process.env.BENCH_ONLY === 'mcp'
if (!ONLY_MCP) {
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
}
await server.close()
await runtime.dispose()

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
function heapAfterGc(): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** How many times each stall figure is taken: on a shared machine one sample can catch the scheduler. */
const STALL_REPEATS = 5

interface StallFigure {
  /** The median over the repeats of each run's max event-loop delay, and the worst of them. */
  readonly maxMs: number
  readonly worstMs: number
  readonly p99Ms: number
  readonly tookMs: number
  /** The median of each run's most process CPU (all threads) between two 1 ms ticks: a turn's work, less exposed to the machine's load than its wall time. */
  readonly cpuMs: number
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** Runs `work` STALL_REPEATS times while sampling the event loop every millisecond. */
async function stallDuring(work: () => Promise<unknown>): Promise<StallFigure> {
  const maxes: number[] = []
  const p99s: number[] = []
  const took: number[] = []
  const cpus: number[] = []
  for (let i = 0; i < STALL_REPEATS; i++) {
    const histogram = monitorEventLoopDelay({ resolution: 1 })
    histogram.enable()
    let last = process.cpuUsage()
    let cpu = 0
    const ticker = setInterval(() => {
      const now = process.cpuUsage()
      cpu = Math.max(cpu, (now.user + now.system - last.user - last.system) / 1000)
      last = now
    }, 1)
    const start = performance.now()
    await work()
    took.push(performance.now() - start)
    clearInterval(ticker)
    cpus.push(cpu)
    histogram.disable()
    maxes.push(histogram.max / 1e6)
    p99s.push(histogram.percentile(99) / 1e6)
  }
  return { maxMs: median(maxes), worstMs: Math.max(...maxes), p99Ms: median(p99s), tookMs: median(took), cpuMs: median(cpus) }
}

function printStall(label: string, figure: StallFigure): void {
  console.log(
    `${label.padEnd(62)} max ${figure.maxMs.toFixed(1).padStart(6)} ms (worst ${figure.worstMs.toFixed(1).padStart(6)})   p99 ${figure.p99Ms.toFixed(1).padStart(5)} ms   cpu/turn ${figure.cpuMs.toFixed(1).padStart(5)} ms   (${figure.tookMs.toFixed(0)} ms)`,
  )
}

console.log('\nhost stall (max event-loop delay of the server process; target ≤ 20 ms)')
console.log(`(median of ${STALL_REPEATS} runs, worst in brackets; the clients run in a child process, so only the server's own work counts; the idle line is the machine's noise floor;`)
console.log(' cpu/turn: the most process CPU, all threads, between two 1 ms ticks, which a loaded machine inflates less than the wall delay)')

/**
 * The MCP app as it was before its answer was streamed in pieces (4b274c9): src/mcp/server.ts
 * with `jsonArrayStream` put back to one whole response a pull, pulled as fast as the socket
 * takes them (no host turn between pulls). Built here, so src/ carries no bench switch.
 */
async function baselineMcp(): Promise<{ createMcpApp: typeof createMcpApp }> {
  const preFix = `function jsonArrayStream(responses: string[][]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let response = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (response === responses.length) {
        controller.close()
        return
      }
      const text = (response === 0 ? '[' : ',') + responses[response]!.join('') + (response === responses.length - 1 ? ']' : '')
      responses[response] = []
      response++
      controller.enqueue(encoder.encode(text))
    },
  })
}`
  return importAs('src/mcp/server.ts', swapFunction(sourceAt('src/mcp/server.ts'), 'jsonArrayStream', preFix), 'mcp-server-pre-fix')
}

/** Runs `source` (an ES module) in a child Node process with `input` as JSON on its stdin; resolves with its stdout. */
function inChild(source: string, input: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', `const input = JSON.parse(await new Response(process.stdin).text())\n${source}`], { stdio: ['pipe', 'pipe', 'inherit'] })
    child.stdin.end(JSON.stringify(input))
    let out = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => (out += chunk))
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`client process exited with ${code}`))))
  })
}

/** Child: `clients` concurrent POSTs of `body` to `url`; prints the bytes answered. */
const POSTER = `
const { url, headers, body, clients } = input
const sizes = await Promise.all(Array.from({ length: clients }, async () => (await (await fetch(url, { method: 'POST', headers, body })).arrayBuffer()).byteLength))
console.log(sizes.reduce((a, b) => a + b, 0))`

/** Child: an SSE request read to its end with fetch, or a raw one that reads nothing for `holdMs`. */
const STREAMER = `
import { connect } from 'node:net'
const { port, request, read, holdMs, url, headers, body } = input
if (read) {
  await (await fetch(url, { method: 'POST', headers, body })).arrayBuffer()
} else {
  const socket = connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.pause()
  socket.write(request)
  await new Promise((resolve) => setTimeout(resolve, holdMs))
  socket.destroy()
}`
printStall('idle: nothing but the sampler', await stallDuring(() => new Promise((resolve) => setTimeout(resolve, 300))))

// An MCP batch at the caps: 32 tools/list over 300 wide tools (4 MiB of answers, the rest -32000);
// a POST's first tools/list (descriptors cached, then 300 new ones). With BASELINE=<ref>, each row
// also for the ref's src/mcp/server.ts (imports pointed at this checkout), row by row.
{
  const wideRuntime = () => {
    const wide = createToolRuntime()
    for (let i = 0; i < 300; i++) {
      wide.register(
        defineTool({
          name: `wide_${i}`,
          description: `A tool with a long description. ${'lorem ipsum '.repeat(40)}`,
          parameters: { path: { type: 'string', required: true, description: 'p'.repeat(200) } },
          output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
          execute: () => 'ok',
        }),
      )
    }
    return wide
  }
  type McpFactory = typeof createMcpApp
  const apps: Array<readonly [string, McpFactory]> = [['', createMcpApp]]
  if (process.env.BASELINE !== undefined) {
    const ref = process.env.BASELINE
    apps.push([`BASELINE ${ref}: `, (await importAs<{ createMcpApp: McpFactory }>('src/mcp/server.ts', sourceAt('src/mcp/server.ts', ref), `mcp-server-${ref}`)).createMcpApp])
  }
  const wide = wideRuntime()
  const postTo = async (url: string, text: string, clients = 1): Promise<number> =>
    Number(await inChild(POSTER, { url, headers: { ...headers, Accept: 'application/json, text/event-stream' }, body: text, clients }))
  const servers = await Promise.all(apps.map(async ([label, make]) => [label, make, await serve(make(wide, { token: TOKEN }), { port: 0 })] as const))
  const atCap = JSON.stringify(Array.from({ length: 32 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/list' })))
  const oneList = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  const each = JSON.stringify({ jsonrpc: '2.0', id: 100_000, method: 'tools/list' }).length + 1
  const finding = JSON.stringify(Array.from({ length: Math.ceil((487 * 1024) / each) }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/list' })))
  for (const [, , server] of servers) await postTo(server.url, atCap) // warm-up
  let bytes = 0
  for (const [label, , server] of servers) printStall(`${label}MCP batch at the caps (32 × tools/list of 300 tools)`, await stallDuring(async () => (bytes = await postTo(server.url, atCap))))
  console.log(`  answered ${(bytes / 1024 / 1024).toFixed(2)} MiB`)
  // Side by side: the pre-fix answer stream (one whole response a pull, no turn between pulls), then today's.
  const baselineServer = await serve((await baselineMcp()).createMcpApp(wide, { token: TOKEN }), { port: 0 })
  await postTo(baselineServer.url, atCap)
  printStall('BASELINE (pre-fix answer stream): 4 clients at once', await stallDuring(() => postTo(baselineServer.url, atCap, 4)))
  await baselineServer.close()
  for (const [label, , server] of servers) printStall(`${label}MCP batch at the caps, 4 clients at once`, await stallDuring(() => postTo(server.url, atCap, 4)))
  for (const [label, , server] of servers) printStall(`${label}one tools/list a POST (300 tools), 8 POSTs at once`, await stallDuring(() => postTo(server.url, oneList, 8)))
  for (const [label, make] of servers) {
    // A fresh runtime each repeat: all 300 descriptors are new to the server.
    const fresh = await Promise.all(Array.from({ length: STALL_REPEATS }, async () => {
      const runtime = wideRuntime()
      return { runtime, server: await serve(make(runtime, { token: TOKEN }), { port: 0 }) }
    }))
    let next = 0
    printStall(`${label}tools/list of 300 tools new to the server, one POST`, await stallDuring(() => postTo(fresh[next++]!.server.url, oneList)))
    for (const { runtime, server } of fresh) {
      await server.close()
      await runtime.dispose()
    }
  }
  printStall("the finding's 487 KiB tools/list batch (refused whole)", await stallDuring(() => postTo(servers[0]![2].url, finding)))
  for (const [, , server] of servers) await server.close()
  await wide.dispose()
}

// A stream client that stops reading while its run floods it: 200 sub-calls of 100 KB (~40 MB of events).
if (!ONLY_MCP) {
  const hub = createSessionLogHub()
  const codeRuntime = createSandboxRuntime()
  const flooded = createToolRuntime({ mode: 'both', codeRuntime, sessionLog: hub })
  flooded.register(
    defineTool({
      name: 'echo',
      description: 'Echo the text back.',
      parameters: { text: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => args.text,
    }),
  )
  let settled: () => void = () => {}
  flooded.on('tools/result', (execution) => {
    if (execution.name === 'run_code') settled()
  })
  const streamServer = await serve(createToolsApp(flooded, { token: TOKEN }), { port: 0 })
  const code = `const text = 'x'.repeat(100000); for (let i = 0; i < 200; i++) await tools.echo({ text }); return 'done'`
  const body = JSON.stringify({ code, description: 'flood' })
  const request =
    `POST /v1/run HTTP/1.1\r\nHost: 127.0.0.1:${streamServer.port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
    `Accept: text/event-stream\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  /** One flooded run; `weigh` forces GCs around it to weigh what it held (never inside a stall measurement). */
  const floodOnce = async (read: boolean, weigh = false): Promise<number> => {
    const done = new Promise<void>((resolve) => (settled = resolve))
    const before = weigh ? heapAfterGc() : 0
    // The client holds its connection for a while after the run, unread, when it does not read.
    const client = inChild(STREAMER, {
      port: streamServer.port,
      request,
      read,
      holdMs: 1_000,
      url: `${streamServer.url}/v1/run`,
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body,
    })
    await done
    // Measured while the client still holds its connection (unread, when it does not read).
    const grown = weigh ? heapAfterGc() - before : 0
    await client
    return grown
  }
  await floodOnce(true) // warm-up
  printStall('a run streaming ~40 MB of events to a client that reads', await stallDuring(() => floodOnce(true)))
  printStall('the same run, its client reading nothing (backlog cap 4 MiB)', await stallDuring(() => floodOnce(false)))
  const grown = await floodOnce(false, true)
  console.log(`  heap held by the stream when its run ended, client still connected (after GC): ${(grown / 1024 / 1024).toFixed(1)} MiB; live stream subscriptions: ${hub.subscriberCount}`)
  await streamServer.close()
  await flooded.dispose()
  await codeRuntime.dispose()
}
