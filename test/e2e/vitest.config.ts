import { defineConfig } from 'vitest/config'

/**
 * The playground end-to-end project, standalone: `npx vitest run --config
 * test/e2e/vitest.config.ts`. Plain Node environment; each file starts the `npm start` server
 * in-process and drives Chromium with Playwright. The demo is built once, before any file
 * (build-demo.setup.ts), so files may run side by side: in `npm test` they run after the parallel
 * files, two at a time, with the paired files of vitest.config.ts (the same `groupOrder`).
 */
export default defineConfig({
  test: {
    name: 'e2e',
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/e2e/**/*.e2e.test.ts'],
    environment: 'node',
    globalSetup: ['test/e2e/build-demo.setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    sequence: { groupOrder: 1 },
  },
})
