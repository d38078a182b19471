/**
 * `npm run bench:python-meter`: the metered MicroPython of toolyard/python beside the published
 * build, same process, interleaved: a loop benchmark's time on each (the meter's overhead), the
 * meter's step rate, and how far past a 300 ms budget `while True: pass` is stopped inline.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { availableParallelism, loadavg } from 'node:os'
import { loadMicroPython as loadPublished } from '@micropython/micropython-webassembly-pyscript'
import { createPythonRuntime } from '../platforms/python/index.js'
import { loadMicroPython as loadMetered } from '../platforms/python/_micropython-bounded.mjs'
import { STEPS_PER_CHECK } from '../engine/python/thread-runs.js'
import { printTable, summarize } from './_stats.js'

const ROUNDS = 15
const LOOP = 'def bench():\n    s = 0\n    for i in range(1000000):\n        s += i * 2 % 7\n    return s\nbench()'
const metered = new WebAssembly.Module(readFileSync(new URL('../platforms/python/_micropython-bounded.wasm', import.meta.url)))

let checks = 0
/** When set: the check throws past it (the inline runtime's clock test, without its bookkeeping). */
let deadline = 0
const meteredOptions = {
  instantiateWasm: (imports: WebAssembly.Imports, done: (i: WebAssembly.Instance, m: WebAssembly.Module) => void) => {
    ;(imports.env as Record<string, unknown>).toolyard_budget_check = () => {
      checks++
      if (deadline > 0 && performance.now() >= deadline) throw new Error('budget')
    }
    void WebAssembly.instantiate(metered, imports).then((instance) => done(instance, metered))
    return {}
  },
}
const base = { heapsize: 16 * 1024 * 1024, linebuffer: false, stdout: () => undefined, stderr: () => undefined }

const published: number[] = []
const meteredMs: number[] = []
const rates: number[] = []
for (let round = 0; round < ROUNDS; round++) {
  for (const which of round % 2 === 0 ? ['published', 'metered'] : ['metered', 'published']) {
    const mp = which === 'published' ? await loadPublished(base) : await loadMetered({ ...base, ...meteredOptions })
    checks = 0
    const t0 = performance.now()
    mp.runPython(LOOP)
    const ms = performance.now() - t0
    if (which === 'published') published.push(ms)
    else {
      meteredMs.push(ms)
      rates.push((checks * STEPS_PER_CHECK) / ms)
    }
  }
}

// Stop latency of the meter itself: from the deadline to the throw reaching the host.
const latency: number[] = []
for (let i = 0; i < ROUNDS; i++) {
  const mp = await loadMetered({ ...base, ...meteredOptions })
  deadline = performance.now() + 300
  try {
    mp.runPython('while True: pass')
  } catch {
    latency.push(performance.now() - deadline)
  }
  deadline = 0
}
// The whole inline runtime: the compute a 300 ms budget's run reports.
const runtime = createPythonRuntime({ computeMs: 300, maxWallMs: 20_000, memoryMb: 32 })
const reported: number[] = []
for (let i = 0; i < ROUNDS; i++) {
  await runtime.warm()
  const result = await runtime.run({ program: 'while True: pass', bindings: [] })
  if (result.error?.kind !== 'timeout') throw new Error(`while True ended as ${JSON.stringify(result.error)}`)
  reported.push(result.stats?.computeMs ?? Number.NaN)
}
await runtime.dispose()

const p = summarize(published)
const m = summarize(meteredMs)
const r = summarize(rates)
const l = summarize(latency)
const c = summarize(reported)
printTable(
  [
    { measure: '1e6-iteration loop, published wasm (ms)', median: p.median, p95: p.p95 },
    { measure: '1e6-iteration loop, metered wasm (ms)', median: m.median, p95: m.p95 },
    { measure: 'metered / published (medians)', median: `${((m.median / p.median - 1) * 100).toFixed(1)} %`, p95: '' },
    { measure: 'step rate (loop steps a ms, metered)', median: r.median, p95: '' },
    { measure: 'meter: deadline to stop (ms)', median: l.median, p95: l.p95 },
    { measure: 'runtime: while True at computeMs 300, reported compute (ms)', median: c.median, p95: c.p95 },
  ],
  `python meter: ${ROUNDS} rounds, interleaved; ${availableParallelism()} cores, load ${loadavg()[0]!.toFixed(1)}`,
)
