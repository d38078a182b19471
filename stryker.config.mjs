// @ts-check
/**
 * Mutation testing (StrykerJS + its vitest runner): `npm run test:mutation`; one folder:
 * `npm run test:mutation -- --mutate 'src/http/**\/*.ts'`. See docs/testing.md.
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  // Its own vitest config: the `node` project's suites only (see that file for what it leaves out).
  vitest: { configFile: 'vitest.stryker.config.ts', related: false },
  mutate: [
    'src/registry/**/*.ts',
    'src/schema/**/*.ts',
    'src/code-mode/**/*.ts',
    'src/code-runtime/**/*.ts',
    'src/http/**/*.ts',
    '!src/**/*.d.ts',
  ],
  // Each mutant runs only the tests that reached it in the initial run.
  coverageAnalysis: 'perTest',
  // Re-runs test only mutants whose code or covering tests changed (`--force` for a full run).
  incremental: true,
  ignoreStatic: true,
  incrementalFile: 'reports/mutation/stryker-incremental.json',
  // The machine is shared; two test-runner processes.
  concurrency: 2,
  // The runners need no heap flag: the full dry run's out-of-memory was each file reporting
  // every earlier file's coverage (test/support/mutation-coverage.ts); peak RSS is now 1.7–1.8 GB.
  // A mutant's run may take its tests' initial time × 1.5 + this before it counts as a timeout
  // (several suites wait on worker threads and wall budgets; a loaded machine needs slack).
  timeoutMS: 10_000,
  dryRunTimeoutMinutes: 15,
  reporters: ['html', 'clear-text', 'progress', 'json', 'folder-summary'],
  appendPlugins: ['./scripts/stryker-folder-summary.mjs'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  clearTextReporter: { reportTests: false, logTests: false, skipFull: true },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
}
