import { relative } from 'node:path'
import { BaseSequencer } from 'vitest/node'
import type { TestSpecification } from 'vitest/node'
import { configDefaults, defineConfig } from 'vitest/config'

/**
 * The test set StrykerJS runs for each mutant (stryker.config.mjs; docs/testing.md): the
 * `node` project's suites, minus the ones below, without type tests (a `.test-d.ts` verdict
 * is tsc's on the unmutated types) and without the other projects (browser, workerd, edge,
 * e2e: they test built artefacts or other runtimes).
 *
 * Left out, measured on the initial run's per-test coverage of the mutated folders:
 * - node-runtime/worker.test.ts and platform-neutral.test.ts: they read the source files
 *   (the generated-bundle drift check; the import scan), which Stryker has instrumented, so
 *   they fail on every run. What they check is checked by `npm test`.
 * - contract/quickjs.contract.test.ts (7 s): the same contract cases run here on the Node
 *   worker and the Node sandbox; no mutant is covered by it alone.
 * - quickjs/quickjs-runtime.test.ts (9 s): one mutant covered by it alone (a reserved word
 *   in wire.ts), which code-runtime/wire.test.ts covers in milliseconds.
 * - mcp/import.test.ts (5 s, spawns MCP servers) and quickjs/workerd-bundle.test.ts (2 s,
 *   bundles the Worker): no mutant covered by them alone.
 * - test/vercel-sdk/ (the provider adapter's check against the Vercel AI SDK): it needs the
 *   package `npm test` installs there, so it fails on a fresh clone, and src/providers is
 *   not a mutated folder.
 * - http/overload.test.ts (6 s: 400 concurrent 20 MB runs), hostile/hostile-programs.test.ts
 *   (4 s) and code-mode/integration.test.ts (2 s, real workers): they reach most of the core,
 *   so they were 2–3 s, 1–1.5 s and 0.5–0.7 s of the average mutant's covering tests in every
 *   folder (the flood test alone 40–80 %). Covered by them alone: 13 mutants (the overload
 *   refusal in http/_routes.ts), 3 (the in-flight call cap of host-session.ts) and none;
 *   the first two are covered in milliseconds by http/run.test.ts (its cases on an
 *   in-process code runtime) and code-runtime/host-session.test.ts.
 */
const LEFT_OUT = [
  'test/unit/node-runtime/worker.test.ts',
  'test/unit/platform-neutral.test.ts',
  'test/contract/quickjs.contract.test.ts',
  'test/unit/quickjs/quickjs-runtime.test.ts',
  'test/unit/mcp/import.test.ts',
  'test/unit/quickjs/workerd-bundle.test.ts',
  'test/unit/http/overload.test.ts',
  'test/unit/hostile/hostile-programs.test.ts',
  'test/unit/code-mode/integration.test.ts',
]

/**
 * More files to leave out for one run, comma-separated globs: to measure what a suite
 * contributes (`TOOLYARD_MUTATION_EXCLUDE='test/unit/http/overload.test.ts' npm run
 * test:mutation -- --mutate …`), or to score the suite as it was before some tests.
 */
const EXTRA_LEFT_OUT = (process.env.TOOLYARD_MUTATION_EXCLUDE ?? '').split(',').map((glob) => glob.trim()).filter((glob) => glob !== '')

/**
 * Only these test files for one run, comma-separated globs (the LEFT_OUT and
 * TOOLYARD_MUTATION_EXCLUDE files stay out): a folder's own tests and the ones that reach it,
 * so that its dry run and its mutants' covering tests skip suites that only cost time there
 * (`TOOLYARD_MUTATION_ONLY='test/unit/http/**' npm run test:mutation -- --mutate
 * 'src/http/**\/*.ts'`). A narrower set can only kill fewer mutants: the score it gives is a
 * lower bound of the whole set's, and the mutants it does not reach show as "no coverage".
 * The sets used per folder are in docs/testing.md.
 */
const ONLY = (process.env.TOOLYARD_MUTATION_ONLY ?? '').split(',').map((glob) => glob.trim()).filter((glob) => glob !== '')
/** vitest's per-test timeout under Stryker: 120 s unless TOOLYARD_MUTATION_TEST_TIMEOUT says otherwise. */
const TEST_TIMEOUT_MS = Number(process.env.TOOLYARD_MUTATION_TEST_TIMEOUT ?? '') > 0 ? Number(process.env.TOOLYARD_MUTATION_TEST_TIMEOUT) : 120_000
const INCLUDE = ['test/**/*.test.ts', 'src/**/*.test.ts', 'engine/**/*.test.ts', 'platforms/**/*.test.ts']

/**
 * Runs files that failed last time first, then the fastest: Stryker stops a mutant's run at
 * its first failing test, so a mutant a quick suite kills never waits for a slow one.
 */
class FastFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache
    const stats = (spec: TestSpecification) => cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`)
    return [...files].sort((a, b) => {
      const sa = stats(a)
      const sb = stats(b)
      if (Boolean(sa?.failed) !== Boolean(sb?.failed)) return sa?.failed ? -1 : 1
      return (sa?.duration ?? 0) - (sb?.duration ?? 0)
    })
  }
}

export default defineConfig({
  test: {
    include: ONLY.length > 0 ? ONLY : INCLUDE,
    // Listing `exclude` replaces vitest's defaults, so they are spread back in: without
    // `**/node_modules/**`, the tests shipped inside test/vercel-sdk/node_modules (installed
    // by `npm test`) joined Stryker's dry run and failed it.
    // test/runtimes runs the BUILT package in Deno and Bun (minutes, and no mutant reaches dist/).
    exclude: [...configDefaults.exclude, 'test/browser/**', 'test/edge/**', 'test/e2e/**', 'test/workerd/**', 'test/vercel-sdk/**', 'test/runtimes/**', ...LEFT_OUT, ...EXTRA_LEFT_OUT],
    environment: 'node',
    // TOOLYARD_MUTATION_SKIP_TESTS='regex' skips the cases it names (that file says why).
    setupFiles: ['test/support/mutation-skip.ts', 'test/support/mutation-coverage.ts', 'test/support/mutation-timers.ts'],
    // One module graph for all files of a run: a mutant's run then imports src/ once, not once per file.
    isolate: false,
    sequence: { sequencer: FastFirstSequencer },
    // Instrumented for per-test coverage, the stack-safety cases (100,000 levels) of
    // schema/json-schema.test.ts took over 30 s in the dry run on the loaded machine.
    // TOOLYARD_MUTATION_TEST_TIMEOUT (ms) lowers it for a per-folder run whose slow cases are
    // skipped: a mutant that leaves a promise pending then fails its test at vitest's timeout,
    // in the same runner, instead of waiting out Stryker's timeout, which kills the runner and
    // starts a new one (the slow part of scoring src/http). Keep it below Stryker's timeoutMS.
    testTimeout: TEST_TIMEOUT_MS,
    hookTimeout: 30_000,
  },
})
