/**
 * Browser code runtime figures, in real Chromium driven by Playwright, for the sandbox
 * (`createSandboxRuntime`: QuickJS in pooled Web Workers; the page is served
 * cross-origin isolated, as `npm start` serves the playground) and the trusted-code
 * Web Worker runtime:
 * - cold `return 1`: one full `run()` on a pre-spawned fresh worker, TypeScript
 *   stripping included (p50 / p95 over many runs; the spare is warmed untimed between);
 * - sub-call round trip: µs per `await tools.noop()` over 1,000 sequential calls.
 * The Node worker_threads runtime is measured the same way for comparison.
 *
 * Run: `npx tsx bench/browser.bench.ts` (Chromium at /usr/bin/chromium, or CHROMIUM_PATH).
 */
import { build } from 'esbuild'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { launchChromium } from './_chromium.js'
import { createNodeWorkerRuntime } from '../platforms/node/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 200)
const CALLS = 1_000

interface Figures {
  readonly cold: readonly number[]
  readonly perCallUs: readonly number[]
  /** A bare MessagePort echo page ↔ worker (browser only): the floor under any protocol. */
  readonly rawUs?: readonly number[]
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[index]!
}

function summary(samples: readonly number[]): { p50: number; p95: number; min: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), min: sorted[0] ?? Number.NaN }
}

// The page-side bench: the same loop the Node side runs, against the browser runtime.
const PAGE_ENTRY = `
import { createBrowserWorkerRuntime, createSandboxRuntime } from './platforms/browser/index.ts'
globalThis.runSandboxBench = async (coldRuns, calls) => {
  const runtime = createSandboxRuntime({ workerUrl: '/sandbox-worker-entry.js' })
  await runtime.warm()
  const cold = []
  for (let i = 0; i < coldRuns; i++) {
    await new Promise((resolve) => setTimeout(resolve, 3))
    const t0 = performance.now()
    const result = await runtime.run({ program: 'const one: number = 1\\nreturn one', bindings: [] })
    cold.push(performance.now() - t0)
    if (result.value !== 1) throw new Error('unexpected result ' + JSON.stringify(result))
  }
  const perCallUs = []
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now()
    const result = await runtime.run({
      program: 'for (let i = 0; i < ${CALLS}; i++) await tools.noop(i)\\nreturn 1',
      bindings: [{ global: 'tools', functions: { noop: async (n) => n } }],
    })
    if (result.value !== 1) throw new Error('unexpected result ' + JSON.stringify(result))
    // The first run warms the JIT of the threads' glue; net of a cold run.
    if (i > 0) perCallUs.push(((performance.now() - t0 - cold[Math.floor(cold.length / 2)]) * 1000) / ${CALLS})
  }
  await runtime.dispose()
  return { cold, perCallUs, isolated: globalThis.crossOriginIsolated }
}
globalThis.runBench = async (coldRuns, calls) => {
  const runtime = createBrowserWorkerRuntime({ prespawn: 1 })
  const cold = []
  for (let i = 0; i < coldRuns; i++) {
    await runtime.warm()
    const t0 = performance.now()
    const result = await runtime.run({ program: 'const one: number = 1\\nreturn one', bindings: [] })
    cold.push(performance.now() - t0)
    if (result.value !== 1) throw new Error('unexpected result ' + JSON.stringify(result))
  }
  const perCallUs = []
  for (let i = 0; i < 5; i++) {
    await runtime.warm()
    const result = await runtime.run({
      program: 'const t0 = performance.now()\\nfor (let i = 0; i < ${CALLS}; i++) await tools.noop(i)\\nreturn (performance.now() - t0) * 1000 / ${CALLS}',
      bindings: [{ global: 'tools', functions: { noop: async (n) => n } }],
    })
    if (typeof result.value !== 'number') throw new Error('unexpected result ' + JSON.stringify(result))
    perCallUs.push(result.value)
  }
  await runtime.dispose()
  // The floor: a bare MessagePort echo between the page and a worker, no protocol at all.
  const echo = 'onmessage = (e) => { const port = e.data.port; const n = e.data.n; let i = 0; const t0 = performance.now();' +
    ' port.onmessage = () => { if (++i === n) { postMessage((performance.now() - t0) * 1000 / n); return } port.postMessage(i) }; port.postMessage(0) }'
  const rawUs = []
  for (let i = 0; i < 5; i++) {
    const worker = new Worker(URL.createObjectURL(new Blob([echo], { type: 'text/javascript' })))
    const channel = new MessageChannel()
    channel.port1.onmessage = (e) => channel.port1.postMessage(e.data)
    const done = new Promise((resolve) => worker.addEventListener('message', (e) => resolve(e.data)))
    worker.postMessage({ port: channel.port2, n: calls }, [channel.port2])
    rawUs.push(await done)
    worker.terminate()
  }
  return { cold, perCallUs, rawUs }
}
`

async function browserFigures(): Promise<{ worker: Figures; sandbox: Figures & { isolated: boolean } }> {
  const out = mkdtempSync(join(tmpdir(), 'toolyard-bench-'))
  try {
    await Promise.all([
      build({
        stdin: { contents: PAGE_ENTRY, resolveDir: root, sourcefile: 'bench-page.ts', loader: 'ts' },
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        minify: true,
        outfile: join(out, 'bench.js'),
        logLevel: 'warning',
      }),
      build({
        entryPoints: [join(root, 'platforms/browser/worker-entry.ts')],
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        minify: true,
        outfile: join(out, 'worker-entry.js'),
        logLevel: 'warning',
      }),
      build({
        entryPoints: [join(root, 'platforms/browser/sandbox-worker-entry.ts')],
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        minify: true,
        outfile: join(out, 'sandbox-worker-entry.js'),
        logLevel: 'warning',
      }),
    ])
    const wasm = readFileSync(createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm'))
    const files: Record<string, string | Buffer> = {
      '/': '<!doctype html><meta charset="utf-8"><script type="module" src="/bench.js"></script>',
      '/bench.js': readFileSync(join(out, 'bench.js'), 'utf8'),
      '/worker-entry.js': readFileSync(join(out, 'worker-entry.js'), 'utf8'),
      '/sandbox-worker-entry.js': readFileSync(join(out, 'sandbox-worker-entry.js'), 'utf8'),
      '/emscripten-module.wasm': wasm,
    }
    const server = createServer((req, res) => {
      const url = req.url ?? '/'
      const body = files[url]
      if (body === undefined) {
        res.writeHead(404).end()
        return
      }
      const type = url === '/' ? 'text/html' : url.endsWith('.wasm') ? 'application/wasm' : 'text/javascript'
      // Cross-origin isolated, as npm start serves the playground: the sandbox shares memory with its workers.
      res.writeHead(200, { 'Content-Type': type, 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin' }).end(body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const browser = await launchChromium()
    try {
      const page = await browser.newPage()
      await page.goto(`http://127.0.0.1:${port}/`)
      await page.waitForFunction(() => typeof (globalThis as { runBench?: unknown }).runBench === 'function')
      const sandbox = await page.evaluate(
        ([coldRuns, calls]) => (globalThis as unknown as { runSandboxBench(a: number, b: number): Promise<Figures & { isolated: boolean }> }).runSandboxBench(coldRuns, calls),
        [COLD_RUNS, CALLS] as const,
      )
      const worker = await page.evaluate(
        ([coldRuns, calls]) => (globalThis as unknown as { runBench(a: number, b: number): Promise<Figures> }).runBench(coldRuns, calls),
        [COLD_RUNS, CALLS] as const,
      )
      return { worker, sandbox }
    } finally {
      await browser.close()
      server.close()
    }
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

async function nodeFigures(): Promise<Figures> {
  const runtime = createNodeWorkerRuntime({ prespawn: 1 })
  const cold: number[] = []
  const perCallUs: number[] = []
  try {
    for (let i = 0; i < COLD_RUNS; i++) {
      await runtime.warm()
      const t0 = performance.now()
      const result = await runtime.run({ program: 'const one: number = 1\nreturn one', bindings: [] })
      cold.push(performance.now() - t0)
      if (result.value !== 1) throw new Error(`unexpected result ${JSON.stringify(result)}`)
    }
    for (let i = 0; i < 5; i++) {
      await runtime.warm()
      const result = await runtime.run({
        program: `const t0 = performance.now()\nfor (let i = 0; i < ${CALLS}; i++) await tools.noop(i)\nreturn (performance.now() - t0) * 1000 / ${CALLS}`,
        bindings: [{ global: 'tools', functions: { noop: async (n: unknown) => n } }],
      })
      if (typeof result.value !== 'number') throw new Error(`unexpected result ${JSON.stringify(result)}`)
      perCallUs.push(result.value)
    }
  } finally {
    await runtime.dispose()
  }
  return { cold, perCallUs }
}

function print(label: string, figures: Figures): void {
  const cold = summary(figures.cold)
  const call = summary(figures.perCallUs)
  console.log(
    `${label.padEnd(24)} cold return 1 (pre-spawned, stripped): p50 ${cold.p50.toFixed(2)} ms  p95 ${cold.p95.toFixed(2)} ms  min ${cold.min.toFixed(2)} ms  (n=${figures.cold.length})`,
  )
  console.log(
    `${''.padEnd(24)} sub-call round trip over ${CALLS} calls: p50 ${call.p50.toFixed(1)} µs  best ${call.min.toFixed(1)} µs  (${figures.perCallUs.length} runs)`,
  )
  if (figures.rawUs !== undefined) {
    const raw = summary(figures.rawUs)
    console.log(`${''.padEnd(24)} floor: bare MessagePort echo round trip: p50 ${raw.p50.toFixed(1)} µs  best ${raw.min.toFixed(1)} µs`)
  }
}

const browser = await browserFigures()
print(`Chromium sandbox${browser.sandbox.isolated ? '' : ' (not isolated)'}`, browser.sandbox)
print('Chromium web-worker', browser.worker)
const node = await nodeFigures()
print('Node worker_threads', node)
console.log('targets: cold ≤ 10 ms p50 (pre-spawned), sub-call ≤ 50 µs')
console.log(`machine load average during the run: ${loadavg().map((n) => n.toFixed(1)).join(' / ')} (1 / 5 / 15 min)`)
