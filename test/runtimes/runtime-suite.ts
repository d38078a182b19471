/**
 * The vitest side of the Deno and Bun runs: one case per runtime that runs its whole runner
 * and asserts every case passed and every skip names its reason; the runner's output is
 * printed when it did not.
 * @module
 */
import { expect, it } from 'vitest'
import { runRuntime, RUNTIMES } from './run-runtime.js'

/** The runner's own bound; vitest's case timeout sits above it, so the runner's output is always reported. */
const RUN_TIMEOUT_MS = 540_000

/** Registers the case for `name`; `minPassed` catches a runner that silently registers fewer suites. */
export function describeRuntimeRun(name: keyof typeof RUNTIMES, minPassed: number): void {
  it(`the contract suites, the hostile cases and the HTTP smoke test pass on ${name} (built package)`, async () => {
    const run = await runRuntime(name, RUN_TIMEOUT_MS)
    const failed = run.code !== 0 || run.summary === undefined || run.summary.failed > 0 || run.summary.passed < minPassed
    if (failed) console.log(`--- ${name} runner output ---\n${run.output}`)
    expect(run.summary, 'the runner printed no summary line').toBeDefined()
    expect(run.summary!.failed).toBe(0)
    expect(run.code).toBe(0)
    expect(run.summary!.passed).toBeGreaterThanOrEqual(minPassed)
    // Every skip says why: a contract gap `(gap: …)`, a case for other runtimes `(trusted runtimes: …)`, or `(skipped: …)`.
    for (const skipped of run.summary!.skipped) expect(skipped).toMatch(/\((gap|trusted runtimes|skipped): [^)]+\)$/)
  }, RUN_TIMEOUT_MS + 30_000)
}
