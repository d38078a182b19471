/**
 * `npm run bench -- python`: the Python sandbox (MicroPython) beside the TypeScript one
 * (QuickJS), same process, interleaved: cold start, back-to-back runs, per-call cost,
 * `gather` of 10 × 100 ms calls, and a hot loop run to its compute budget with the host's longest
 * event-loop gap meanwhile. Chromium: `npm run bench -- python-browser`. Figures are printed, never asserted.
 *
 * @module
 */
import { availableParallelism, loadavg } from 'node:os'
import { createSandboxRuntime } from '../platforms/node/index.js'
import type { SandboxRuntime } from '../platforms/node/index.js'
import type { CodeBindingNamespace } from '../src/code-runtime/contract.js'
import { printTable, summarize } from './_stats.js'

const LANGUAGES = ['typescript', 'python'] as const
type Language = (typeof LANGUAGES)[number]

const CALLS = 200
const programs: Record<Language, { one: string; calls: string; gather: string; hot: string }> = {
  typescript: {
    one: 'return 1',
    calls: `let s = 0\nfor (let i = 0; i < ${CALLS}; i++) s += await tools.id({ i })\nreturn s`,
    gather: 'return await Promise.all(Array.from({ length: 10 }, () => tools.slow()))',
    hot: 'while (true) {}',
  },
  python: {
    one: 'return 1',
    calls: `s = 0\nfor i in range(${CALLS}):\n    s += await tools.id({"i": i})\nreturn s`,
    gather: 'return await asyncio.gather(*[tools.slow() for _ in range(10)])',
    hot: 'while True:\n    pass',
  },
}
const tools: CodeBindingNamespace = {
  global: 'tools',
  functions: {
    id: async (args) => (args as { i: number }).i,
    slow: async () => {
      await new Promise((resolve) => setTimeout(resolve, 100))
      return 1
    },
  },
}

async function timed(runtime: SandboxRuntime, program: string, expectError = false): Promise<number> {
  const started = performance.now()
  const result = await runtime.run({ program, bindings: [tools] })
  if ((result.error !== undefined) !== expectError) throw new Error(`${runtime.language}: ${result.error?.message ?? 'ran to its end'}`)
  return performance.now() - started
}

/** `work`'s time and the host's longest gap between setImmediate ticks while it ran. */
async function withLongestGap(work: Promise<number>): Promise<{ ms: number; longest: number }> {
  let last = performance.now()
  let longest = 0
  let running = true
  const tick = () => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  const ms = await work
  running = false
  return { ms, longest }
}

const rows: Record<string, string | number>[] = []
const add = (measure: string, figures: Record<Language, number[]>, unit = 'ms') => {
  for (const language of LANGUAGES) {
    const s = summarize(figures[language])
    rows.push({ measure, language, median: `${s.median.toFixed(2)} ${unit}`, p95: `${s.p95.toFixed(2)} ${unit}`, n: figures[language].length })
  }
}

console.log(`load ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`)
const cold: Record<Language, number[]> = { typescript: [], python: [] }
for (let i = 0; i < 5; i++) {
  for (const language of LANGUAGES) {
    const started = performance.now()
    const runtime = createSandboxRuntime({ language, prespawn: 1, maxConcurrentRuns: 1 })
    await timed(runtime, programs[language].one)
    cold[language].push(performance.now() - started)
    await runtime.dispose()
  }
}
add('create → first `return 1`', cold)

const runtimes = Object.fromEntries(LANGUAGES.map((language) => [language, createSandboxRuntime({ language, prespawn: 1, maxConcurrentRuns: 1, computeMs: 30_000 })])) as Record<Language, SandboxRuntime>
await Promise.all(LANGUAGES.map((language) => runtimes[language].warm()))
const back: Record<Language, number[]> = { typescript: [], python: [] }
const perCall: Record<Language, number[]> = { typescript: [], python: [] }
const gather: Record<Language, number[]> = { typescript: [], python: [] }
for (let i = 0; i < 40; i++) for (const language of LANGUAGES) back[language].push(await timed(runtimes[language], programs[language].one))
for (let i = 0; i < 10; i++) {
  for (const language of LANGUAGES) {
    const whole = await timed(runtimes[language], programs[language].calls)
    perCall[language].push((whole * 1000) / CALLS)
  }
}
for (let i = 0; i < 5; i++) for (const language of LANGUAGES) gather[language].push(await timed(runtimes[language], programs[language].gather))
add('back-to-back `return 1`', back)
add(`per call (${CALLS} sequential, whole run / ${CALLS})`, perCall, 'µs')
add('gather of 10 × 100 ms calls', gather)
await Promise.all(LANGUAGES.map((language) => runtimes[language].dispose()))

const hotRuntimes = Object.fromEntries(LANGUAGES.map((language) => [language, createSandboxRuntime({ language, prespawn: 1, maxConcurrentRuns: 1, computeMs: 500 })])) as Record<Language, SandboxRuntime>
await Promise.all(LANGUAGES.map((language) => hotRuntimes[language].warm()))
const hot: Record<Language, number[]> = { typescript: [], python: [] }
const hotStall: Record<Language, number[]> = { typescript: [], python: [] }
for (let i = 0; i < 5; i++) {
  for (const language of LANGUAGES) {
    const { ms, longest } = await withLongestGap(timed(hotRuntimes[language], programs[language].hot, true))
    hot[language].push(ms)
    hotStall[language].push(longest)
  }
}
add('hot loop to its 500 ms compute budget', hot)
add("hot loop: the host's longest event-loop gap", hotStall)
await Promise.all(LANGUAGES.map((language) => hotRuntimes[language].dispose()))
printTable(rows, 'Python sandbox (MicroPython) beside the TypeScript sandbox (QuickJS), Node worker_threads')
