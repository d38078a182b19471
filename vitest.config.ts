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
 *   (test/e2e/vitest.config.ts).
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'engine/**/*.test.ts', 'platforms/**/*.test.ts'],
          // Listing exclude replaces vitest's defaults: node_modules (test/vercel-sdk has its own) must be named again.
          exclude: ['**/node_modules/**', 'test/browser/**', 'test/edge/**', 'test/e2e/**', 'test/workerd/**'],
          environment: 'node',
          testTimeout: 30_000,
          hookTimeout: 30_000,
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
      {
        test: {
          name: 'edge',
          include: ['test/edge/*.test.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
      './vitest.workerd.config.ts',
      './vitest.browser.config.ts',
      './test/e2e/vitest.config.ts',
    ],
  },
})
