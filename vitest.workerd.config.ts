import { cloudflareTest } from '@cloudflare/vitest-pool-workers'
import { defineConfig } from 'vitest/config'

const CORE_UNIT_SUITES = [
  'test/unit/schema/**/*.test.ts',
  'test/unit/registry/**/*.test.ts',
  'test/unit/code-mode/bridge.test.ts',
  'test/unit/code-mode/render-output.test.ts',
  'test/unit/code-mode/run-code.test.ts',
  'test/unit/sdk/sdk.test.ts',
  'test/unit/sdk/sdk-typescript.test.ts',
  'test/unit/http/app.test.ts',
  'test/unit/http/primitives.test.ts',
  'test/unit/node-runtime/session-hostile.test.ts',
  'test/unit/node-runtime/strip-render.test.ts',
]

export default defineConfig({
  plugins: [
    cloudflareTest({
      miniflare: {
        compatibilityDate: '2026-04-20',
        compatibilityFlags: ['nodejs_compat'],
        modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm', '**/quickjs-wasmfile-release-sync/wasm'] }],
      },
    }),
  ],
  test: {
    name: 'workerd',
    include: [...CORE_UNIT_SUITES, 'test/edge/workerd/**/*.test.ts'],
    testTimeout: 60_000,
  },
})
