import { cloudflareTest } from '@cloudflare/vitest-pool-workers'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  plugins: [cloudflareTest({ miniflare: { compatibilityDate: '2026-04-20', compatibilityFlags: ['nodejs_compat'] } })],
  test: {
    name: 'workerd',
    include: ['test/edge/workerd/**/*.test.ts'],
    testTimeout: 60_000,
    server: { deps: { external: [/test\/edge\/workerd\/quickjs-wasm\.mjs$/] } },
  },
})
