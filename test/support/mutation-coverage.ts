/**
 * A setup file of vitest.stryker.config.ts only: gives each test file's report of Stryker's
 * dry run only the per-test coverage of its own tests, so that the reports add up to the
 * run's coverage once instead of once per file.
 *
 * Why: Stryker's vitest runner hands each file's coverage to its process in the file's
 * `meta` (`suite.meta.mutantCoverage = ns.mutantCoverage`, in its own setup file), and reads
 * it back from every file at the end. Its counters live on `globalThis`, which under
 * `isolate: false` (all files of a run in one thread and module graph) is never reset: every
 * file's report carried the coverage of every file before it. The runner's process kept one
 * copy per file — memory quadratic in the number of files: with ~250 files the full default
 * dry run ran out of a 6 GiB heap, sooner or later depending on the order of the files.
 *
 * How: after a file's tests, this hands the counters gathered so far to that file's report
 * and gives the live counters fresh, empty tables. The instrumented modules keep the live
 * object (each captures it on its first count) and look its tables up on every count, so the
 * next file counts into the new tables. Stryker's own `afterAll`, which would report the
 * live object, then assigns to a property whose setter ignores it; the order of the two
 * hooks does not matter. Mutant runs (`mode: 'mutant'`) count no coverage: untouched.
 */
import { afterAll, inject } from 'vitest'

declare module 'vitest' {
  /** What Stryker's vitest runner provides to its setup file (@stryker-mutator/vitest-runner). */
  interface ProvidedContext {
    /** The global that holds Stryker's counters (`__stryker__` by default). */
    globalNamespace: string
    /** 'dry-run' while coverage is gathered, 'mutant' while one mutant's tests run. */
    mode: 'dry-run' | 'mutant'
  }
}

/** Stryker's counters: mutant id → hits, outside any test and per test id. */
interface MutantCoverage {
  static: Record<string, number>
  perTest: Record<string, Record<string, number>>
}

const namespace = inject('globalNamespace')
if (typeof namespace === 'string' && inject('mode') === 'dry-run') {
  // vitest reads a hook's first parameter for fixtures: it must be an object pattern, even an empty one.
  afterAll(({}, suite) => {
    const live = (globalThis as unknown as Record<string, { mutantCoverage?: MutantCoverage } | undefined>)[namespace]?.mutantCoverage
    if (live === undefined) return
    const own: MutantCoverage = { static: live.static, perTest: live.perTest }
    live.static = {}
    live.perTest = {}
    Object.defineProperty(suite.meta, 'mutantCoverage', {
      enumerable: true,
      configurable: true,
      get: () => own,
      set: () => {},
    })
  })
}
