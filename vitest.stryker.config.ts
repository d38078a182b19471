import { defineConfig } from 'vitest/config'

/**
 * The test set StrykerJS runs (stryker.config.mjs): the `node` project's unit, contract and
 * integration suites, without type tests (a mutant cannot change a `.test-d.ts` verdict
 * that tsc reaches on the unmutated types) and without the other projects (browser,
 * workerd, edge, e2e, dist), which test built artefacts or other runtimes.
 */
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'platforms/**/*.test.ts'],
    exclude: ['test/dist/**', 'test/browser/**', 'test/edge/**', 'test/e2e/**', 'test/workerd/**', 'test/unit/node-runtime/worker.test.ts', 'test/unit/platform-neutral.test.ts'],
    environment: 'node',
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
