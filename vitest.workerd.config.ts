import { cloudflareTest } from '@cloudflare/vitest-pool-workers'
import type { Plugin } from 'vite'
import { defineConfig } from 'vitest/config'
import { quietWorkerdDisconnects } from './test/support/quiet-output.js'

/**
 * The core's platform-neutral unit suites (they and their helpers import nothing from
 * `node:*`, no Node-only package, no `platforms/node|browser`; checked by bundling each
 * for `platform: 'neutral'`) and the CodeRuntime contract suite for QuickJS, run inside
 * workerd by @cloudflare/vitest-pool-workers. `npx vitest run --config vitest.workerd.config.ts`.
 *
 * Left out on purpose:
 * - test/unit/code-mode/bridge.test.ts and test/unit/approvals/code-mode.test.ts: their
 *   in-process test runtime compiles programs with the AsyncFunction constructor, which
 *   workerd forbids and the pool does NOT re-enable (it patches only `Function`).
 * - integration/run/serve/node-runtime worker suites, the QuickJS Node suites, sdk-python,
 *   sdk-typecheck, platform-neutral: they spawn processes, read files, or load the
 *   TypeScript compiler or `platforms/node`.
 *
 * The pool re-enables `new Function`: what must hold under real workerd rules is tested
 * on the built Worker with Miniflare (test/edge/built-worker.test.ts, the `edge` project).
 */
const CORE_UNIT_SUITES = [
  'test/unit/schema/**/*.test.ts',
  'test/unit/registry/**/*.test.ts',
  'test/unit/code-mode/render-output.test.ts',
  'test/unit/code-mode/run-code.test.ts',
  'test/unit/sdk/sdk.test.ts',
  'test/unit/sdk/sdk-typescript.test.ts',
  'test/unit/http/app.test.ts',
  'test/unit/http/primitives.test.ts',
  'test/unit/node-runtime/session-hostile.test.ts',
  'test/unit/node-runtime/strip-render.test.ts',
  'test/unit/mcp/import-portable.test.ts',
  'test/unit/approvals/broker.test.ts',
  'test/unit/approvals/broker-store.test.ts',
  'test/unit/catalog/**/*.test.ts',
  'test/unit/json/**/*.test.ts',
  'test/unit/telemetry/portable.test.ts',
]

/**
 * Drops one known, harmless warning from vite's logger: the pool transforms the MCP SDK
 * from node_modules, whose published sourcemaps name `src/` files the package does not
 * ship (12 "Sourcemap for … points to missing source files" lines a run). Only that
 * message, and only for files under node_modules, is dropped; every other warning still
 * prints. A plugin, because vitest replaces a config's `customLogger` with its own.
 */
function quietDependencySourcemaps(): Plugin {
  const missingSources = /^Sourcemap for "[^"]*\/node_modules\/[^"]*" points to missing source files$/
  return {
    name: 'toolyard:quiet-dependency-sourcemaps',
    configResolved(config) {
      const logger = config.logger
      const warnOnce = logger.warnOnce
      logger.warnOnce = (message, options) => {
        if (!missingSources.test(message)) warnOnce.call(logger, message, options)
      }
    },
  }
}

export default defineConfig({
  plugins: [
    quietDependencySourcemaps(),
    quietWorkerdDisconnects(),
    cloudflareTest({
      miniflare: {
        compatibilityDate: '2026-04-20',
        compatibilityFlags: ['nodejs_compat'],
        // The pool serves a module matching a rule natively, with that type: the QuickJS wasm
        // (`import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'`) arrives as a
        // workerd-compiled WebAssembly.Module, as in a wrangler deployment. Without the rule,
        // Vite treats the .wasm as an ESM-integration module and fails on its imports; and
        // compiling the bytes ourselves is refused even in the pool.
        modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
      },
    }),
  ],
  test: {
    name: 'workerd',
    include: [...CORE_UNIT_SUITES, 'test/edge/workerd/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
