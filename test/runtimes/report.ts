/**
 * Runs the registered cases and prints one line per case, failures in full, then the
 * summary line the vitest wrapper parses (`RUNTIME-SUMMARY {json}`), and exits 0 only
 * when nothing failed.
 * @module
 */
import { runRegistered, type CaseResult } from './vitest-shim.js'

/** The summary line's payload. */
export interface RuntimeSummary {
  readonly runtime: string
  readonly version: string
  readonly passed: number
  readonly failed: number
  /** Every skipped case by name: the contract suites put the reason in the name. */
  readonly skipped: readonly string[]
  readonly ms: number
}

/** The first line of a summary, the one the wrapper looks for. */
export const SUMMARY_PREFIX = 'RUNTIME-SUMMARY '

const MARK = { passed: 'ok  ', failed: 'FAIL', skipped: 'skip' } as const

/** Runs everything registered, then exits the process (`exit` is the runtime's own). */
export async function runAndExit(runtime: string, version: string, exit: (code: number) => never, filter?: string): Promise<never> {
  const started = performance.now()
  let results: CaseResult[] = []
  let crash: unknown
  try {
    results = await runRegistered({
      filter: filter ? (name) => name.includes(filter) : undefined,
      report: (result) => {
        // A case title may hold a program (it.each): one line per case all the same.
        console.log(`${MARK[result.outcome]} ${result.name.replace(/\n/g, '⏎')}${result.outcome === 'skipped' ? '' : ` (${result.ms} ms)`}`)
        if (result.error !== undefined) console.log(result.error.replace(/^/gm, '     '))
      },
    })
  } catch (error) {
    // A hook outside any case failed: the run is a failure, whatever passed before it.
    crash = error
    console.log(`FAIL a suite hook threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  }
  const count = (outcome: CaseResult['outcome']) => results.filter((r) => r.outcome === outcome)
  const summary: RuntimeSummary = {
    runtime,
    version,
    passed: count('passed').length,
    failed: count('failed').length + (crash === undefined ? 0 : 1),
    skipped: count('skipped').map((r) => r.name),
    ms: Math.round(performance.now() - started),
  }
  console.log(`${SUMMARY_PREFIX}${JSON.stringify(summary)}`)
  console.log(`${runtime}: ${summary.passed} passed, ${summary.failed} failed, ${summary.skipped.length} skipped`)
  return exit(summary.failed === 0 && summary.passed > 0 ? 0 : 1)
}
