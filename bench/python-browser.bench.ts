/**
 * `npm run bench -- python-browser`: the Python sandbox (MicroPython) beside the TypeScript
 * one (QuickJS) in real Chromium (module Web Workers, the page cross-origin isolated as
 * `npm start` serves it), same page, interleaved. Figures are printed, never asserted.
 *
 * @module
 */
import { build } from 'esbuild'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { availableParallelism, loadavg } from 'node:os'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { launchChromium } from './_chromium.js'
import { printTable, summarize } from './_stats.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const CALLS = 200

// The page: both runtimes from `toolyard/browser`'s source, the measures of bench/python.bench.ts,
// and the hot loop's stall of the page's own event loop (the longest gap between MessageChannel
// ticks while `while True: pass` runs to its compute budget in the worker).
const PAGE_ENTRY = `
import { createSandboxRuntime } from './platforms/browser/index.ts'
const LANGUAGES = ['typescript', 'python']
const programs = {
  typescript: {
    one: 'return 1',
    calls: 'let s = 0\\nfor (let i = 0; i < ${CALLS}; i++) s += await tools.id({ i })\\nreturn s',
    gather: 'return await Promise.all(Array.from({ length: 10 }, () => tools.slow()))',
    hot: 'while (true) {}',
  },
  python: {
    one: 'return 1',
    calls: 's = 0\\nfor i in range(${CALLS}):\\n    s += await tools.id({"i": i})\\nreturn s',
    gather: 'return await asyncio.gather(*[tools.slow() for _ in range(10)])',
    hot: 'while True:\\n    pass',
  },
}
const tools = { global: 'tools', functions: { id: async (a) => a.i, slow: () => new Promise((r) => setTimeout(() => r(1), 100)) } }
const create = (language, extra = {}) => createSandboxRuntime({ language, prespawn: 1, maxConcurrentRuns: 1, ...extra })
async function timed(runtime, program, expectError = false) {
  const t0 = performance.now()
  const result = await runtime.run({ program, bindings: [tools] })
  if ((result.error !== undefined) !== expectError) throw new Error(runtime.language + ': ' + JSON.stringify(result.error ?? result.value))
  return performance.now() - t0
}
function longestGap(work) {
  const channel = new MessageChannel()
  let last = performance.now(), longest = 0, running = true
  channel.port1.onmessage = () => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    if (running) channel.port2.postMessage(0)
  }
  channel.port2.postMessage(0)
  return work.then((ms) => { running = false; channel.port1.close(); return { ms, longest } })
}
globalThis.runPythonBench = async () => {
  const f = {}
  for (const l of LANGUAGES) f[l] = { cold: [], back: [], perCall: [], gather: [], hot: [], hotStall: [] }
  for (let i = 0; i < 5; i++) {
    for (const l of LANGUAGES) {
      const t0 = performance.now()
      const runtime = create(l)
      await timed(runtime, programs[l].one)
      f[l].cold.push(performance.now() - t0)
      await runtime.dispose()
    }
  }
  const runtimes = Object.fromEntries(LANGUAGES.map((l) => [l, create(l, { computeMs: 30000 })]))
  await Promise.all(LANGUAGES.map((l) => runtimes[l].warm()))
  for (let i = 0; i < 40; i++) for (const l of LANGUAGES) f[l].back.push(await timed(runtimes[l], programs[l].one))
  for (let i = 0; i < 10; i++) for (const l of LANGUAGES) f[l].perCall.push(((await timed(runtimes[l], programs[l].calls)) * 1000) / ${CALLS})
  for (let i = 0; i < 5; i++) for (const l of LANGUAGES) f[l].gather.push(await timed(runtimes[l], programs[l].gather))
  await Promise.all(LANGUAGES.map((l) => runtimes[l].dispose()))
  const hotRuntimes = Object.fromEntries(LANGUAGES.map((l) => [l, create(l, { computeMs: 500 })]))
  await Promise.all(LANGUAGES.map((l) => hotRuntimes[l].warm()))
  for (let i = 0; i < 5; i++) {
    for (const l of LANGUAGES) {
      const { ms, longest } = await longestGap(timed(hotRuntimes[l], programs[l].hot, true))
      f[l].hot.push(ms)
      f[l].hotStall.push(longest)
    }
  }
  await Promise.all(LANGUAGES.map((l) => hotRuntimes[l].dispose()))
  return { figures: f, isolated: globalThis.crossOriginIsolated }
}
`

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.map': 'application/json' }

async function pageFigures(): Promise<{ figures: Record<'typescript' | 'python', Record<string, number[]>>; isolated: boolean }> {
  // The playground's build holds both worker entries with their wasm beside them: the runtimes'
  // default worker URLs (`./<entry>.js` next to the page's bundle) find them there.
  const built = spawnSync(process.execPath, ['scripts/build-demo.mjs'], { cwd: root, stdio: 'inherit' })
  if (built.status !== 0) throw new Error('scripts/build-demo.mjs failed')
  const page = await build({
    stdin: { contents: PAGE_ENTRY, resolveDir: root, sourcefile: 'python-bench-page.ts', loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    conditions: ['browser', 'import', 'default'],
    logLevel: 'warning',
  })
  const bundle = page.outputFiles[0]!.text
  const dist = join(root, 'demo/dist')
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    let body: string | Buffer
    try {
      body = path === '/' ? '<!doctype html><meta charset="utf-8"><script type="module" src="/bench.js"></script>' : path === '/bench.js' ? bundle : readFileSync(join(dist, path.replace(/^\/+/, '').replace(/\.\.+/g, '')))
    } catch {
      res.writeHead(404).end()
      return
    }
    const type = path === '/' ? 'text/html' : (TYPES[extname(path)] ?? 'application/octet-stream')
    res.writeHead(200, { 'Content-Type': type, 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin' }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const browser = await launchChromium()
  try {
    const tab = await browser.newPage()
    await tab.goto(`http://127.0.0.1:${port}/`)
    await tab.waitForFunction(() => typeof (globalThis as { runPythonBench?: unknown }).runPythonBench === 'function')
    return await tab.evaluate(() => (globalThis as unknown as { runPythonBench(): Promise<{ figures: Record<'typescript' | 'python', Record<string, number[]>>; isolated: boolean }> }).runPythonBench())
  } finally {
    await browser.close()
    server.close()
  }
}

console.log(`load ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`)
const { figures, isolated } = await pageFigures()
const MEASURES: readonly [key: string, label: string, unit: string][] = [
  ['cold', 'create → first `return 1`', 'ms'],
  ['back', 'back-to-back `return 1`', 'ms'],
  ['perCall', `per call (${CALLS} sequential, whole run / ${CALLS})`, 'µs'],
  ['gather', 'gather of 10 × 100 ms calls', 'ms'],
  ['hot', 'hot loop to its 500 ms compute budget', 'ms'],
  ['hotStall', "hot loop: the page's longest event-loop gap", 'ms'],
]
const rows: Record<string, string | number>[] = []
for (const [key, measure, unit] of MEASURES) {
  for (const language of ['typescript', 'python'] as const) {
    const s = summarize(figures[language][key]!)
    rows.push({ measure, language, median: `${s.median.toFixed(2)} ${unit}`, p95: `${s.p95.toFixed(2)} ${unit}`, n: s.n })
  }
}
printTable(rows, `Python sandbox beside the TypeScript sandbox, Chromium Web Workers${isolated ? '' : ' (page not cross-origin isolated)'}`)
console.log(`load after: ${loadavg()[0]!.toFixed(1)}`)
