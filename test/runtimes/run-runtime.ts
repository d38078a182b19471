/**
 * Runs one runtime's runner (bundled against dist/) in that runtime's binary, bounded in
 * time, and returns its output and parsed summary. Used by deno.test.ts / bun.test.ts, and
 * standalone: `npx tsx test/runtimes/run-runtime.ts deno|bun` (after `npm run build`).
 * @module
 */
import { fileURLToPath } from 'node:url'
import { bunBinary, denoBinary } from './binaries.js'
import { bundleRunner } from './bundle.js'
import { startChild } from '../support/child.js'
import { SUMMARY_PREFIX, type RuntimeSummary } from './report.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** How each runtime is started on a bundle. */
export const RUNTIMES = {
  // --no-lock: Deno would otherwise write a deno.lock beside package.json.
  deno: { binary: denoBinary, args: (bundle: string) => ['run', '--allow-all', '--no-lock', bundle], entry: 'test/runtimes/deno.runner.ts' },
  bun: { binary: bunBinary, args: (bundle: string) => [bundle], entry: 'test/runtimes/bun.runner.ts' },
} as const

/** What a run left: its exit code (null when killed), its output (the last MiB), and its summary line if it printed one. */
export interface RuntimeRun {
  readonly code: number | null
  readonly output: string
  readonly summary: RuntimeSummary | undefined
  readonly wallMs: number
}

/** Bundles and runs `name`'s runner; kills it after `timeoutMs`. `onOutput` sees the output as it comes. */
export async function runRuntime(name: keyof typeof RUNTIMES, timeoutMs: number, onOutput?: (text: string) => void): Promise<RuntimeRun> {
  const runtime = RUNTIMES[name]
  const bundle = await bundleRunner(runtime.entry)
  const started = performance.now()
  const child = startChild(runtime.binary(), runtime.args(bundle), { cwd: root, env: { NO_COLOR: '1' }, ...(onOutput === undefined ? {} : { onOutput }) })
  const { code } = await child.exit(timeoutMs)
  const output = child.output
  const line = output.split('\n').find((l) => l.startsWith(SUMMARY_PREFIX))
  const summary = line === undefined ? undefined : (JSON.parse(line.slice(SUMMARY_PREFIX.length)) as RuntimeSummary)
  return { code, output, summary, wallMs: Math.round(performance.now() - started) }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const name = process.argv[2]
  if (name !== 'deno' && name !== 'bun') {
    console.error('usage: npx tsx test/runtimes/run-runtime.ts deno|bun')
    process.exit(2)
  }
  const run = await runRuntime(name, 900_000, (text) => process.stdout.write(text))
  process.exit(run.code ?? 1)
}
