import { defineConfig } from 'vitest/config'

/**
 * One vitest project per runtime. `node` runs the unit, contract and integration
 * suites from source; `dist` re-runs the published-artifact checks against the built
 * package (run after `npm run build`). Browser and workerd projects join with their issues.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'platforms/**/*.test.ts'],
          exclude: ['test/dist/**', 'test/browser/**', 'test/edge/**', 'test/e2e/**'],
          environment: 'node',
          testTimeout: 30_000,
          hookTimeout: 30_000,
          typecheck: {
            enabled: true,
            include: ['test/**/*.test-d.ts'],
            tsconfig: './tsconfig.json',
          },
        },
      },
      {
        test: {
          name: 'dist',
          include: ['test/dist/**/*.test.ts'],
          environment: 'node',
          testTimeout: 60_000,
        },
      },
    ],
  },
})
