import { defineConfig } from 'vitest/config'

/**
 * One vitest project per runtime:
 * - `node`: unit, contract and integration suites from source (plus type tests);
 * - `browser`: real Chromium — the CodeRuntime contract on Web Workers and the core unit suites
 *   (vitest.browser.config.ts);
 * - `edge`: the BUILT Cloudflare Worker bundle under real workerd rules (Miniflare);
 * - `workerd`: the core unit suites and the CodeRuntime contract inside workerd
 *   (vitest.workerd.config.ts, @cloudflare/vitest-pool-workers);
 * - `e2e`: the playground driven by Playwright against the `npm start` server
 *   (test/e2e/vitest.config.ts);
 * - `node-alone`, `edge-alone`: the files of `node` and `edge` that run alone (ALONE below).
 */
/**
 * Files that measure something against the clock or hold hundreds of runs in flight (a deadline,
 * a replay budget, a heartbeat, two servers racing): they run after the parallel files, one at a
 * time, in the `node-alone` and `edge-alone` projects. Everything else runs `PARALLEL` files at once.
 */
const ALONE = {
  node: [
    'test/unit/http/overload.test.ts',
    'test/unit/http/runs-lifecycle.test.ts',
    'test/unit/durable/runtime-resume-pinned.test.ts',
    'test/unit/durable/run-service-pinned.test.ts',
    'test/unit/sandbox/parking.test.ts',
    'test/unit/quickjs/parking-budget.test.ts',
    'test/unit/python/parking.test.ts',
    'test/unit/postgres/two-instances.test.ts',
    'test/unit/postgres/live-events.test.ts',
    'test/unit/docs/doc-samples.test.ts',
    // Failed beside other files at load 15-20 (a compute budget, a 30 s test timeout, a peak of
    // calls in flight, a server's start-up deadline): run 1 of PARALLEL 3, 2026-12-06.
    'test/unit/sandbox/binding-budgets.test.ts',
    'test/unit/hostile/hostile-programs.test.ts',
    'test/unit/python/python-hostile.test.ts',
    'test/unit/python/python-sandbox.test.ts',
    'test/unit/python/thread-budget.test.ts',
    'test/unit/schema/ajv-differential.test.ts',
    'test/unit/preflight/plan-thread.test.ts',
    'test/unit/durable/bound-records.test.ts',
    'test/unit/durable/crash-resume.test.ts',
    'test/unit/durable/file-store.test.ts',
  ],
  edge: ['test/edge/runs-object.test.ts', 'test/edge/telemetry-resume.test.ts'],
}

/**
 * Test files run at once in the parallel group (node, edge and workerd share it; the browser
 * project runs its own page beside them). Most files wait on child processes, servers, threads
 * or a browser, so more files than cores keeps the 2 cores busy; vitest's default is cores - 1.
 */
const PARALLEL = 2

const NODE = {
  include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'engine/**/*.test.ts', 'platforms/**/*.test.ts'],
  // Listing exclude replaces vitest's defaults: node_modules (test/vercel-sdk has its own) must be named again.
  exclude: ['**/node_modules/**', 'test/browser/**', 'test/edge/**', 'test/e2e/**', 'test/workerd/**', 'test/**/*.browser.test.ts'],
  environment: 'node',
  testTimeout: 30_000,
  hookTimeout: 30_000,
}
const EDGE = { include: ['test/edge/*.test.ts'], environment: 'node', testTimeout: 60_000, hookTimeout: 180_000 }

export default defineConfig({
  test: {
    maxWorkers: PARALLEL,
    projects: [
      {
        test: {
          name: 'node',
          ...NODE,
          exclude: [...NODE.exclude, ...ALONE.node],
          // The type tests (test/types/*.test-d.ts) are compiled by `npm run typecheck` (the
          // same tsc and tsconfig vitest would use: a wrong inference is a compile error), so
          // `npm test` checks them without vitest's "experimental feature" banner on every run.
          // `TYPE_TESTS=1 npx vitest run --project node test/types` runs them as vitest type tests.
          typecheck: {
            enabled: process.env.TYPE_TESTS === '1',
            include: ['test/**/*.test-d.ts'],
            exclude: ['**/node_modules/**'],
            tsconfig: './tsconfig.json',
          },
        },
      },
      // fileParallelism: false puts a project's files in vitest's last, sequential group (with e2e).
      { test: { name: 'node-alone', ...NODE, include: ALONE.node, fileParallelism: false } },
      { test: { name: 'edge', ...EDGE, exclude: ALONE.edge } },
      { test: { name: 'edge-alone', ...EDGE, include: ALONE.edge, fileParallelism: false } },
      './vitest.workerd.config.ts',
      './vitest.browser.config.ts',
      './test/e2e/vitest.config.ts',
    ],
  },
})
