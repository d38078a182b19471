import { defineConfig } from 'vitest/config'

/**
 * The playground end-to-end project, standalone: `npx vitest run --config
 * test/e2e/vitest.config.ts`. Plain Node environment; the test builds the demo, starts
 * the `npm start` server in-process and drives Chromium with Playwright.
 */
export default defineConfig({
  test: {
    name: 'e2e',
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/e2e/**/*.e2e.test.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
})
