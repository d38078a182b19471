import { playwright } from '@vitest/browser-playwright'
import { defineConfig } from 'vitest/config'
import { quietOptimizerProgress } from './test/support/quiet-output.js'

/**
 * The core unit suites that are platform-neutral (they and their helpers import nothing
 * from `node:*`), re-run in Chromium. Suites that spawn processes, read files or load the
 * TypeScript compiler (sdk-python, sdk-typecheck, the Node/QuickJS runtimes, serve, run,
 * platform-neutral) stay Node-only, and so do the HTTP suites: they set `Origin` and
 * `Content-Length` on `Request`s, which browsers forbid (the headers are dropped).
 */
const CORE_UNIT_SUITES = [
  'test/unit/schema/**/*.test.ts',
  'test/unit/registry/**/*.test.ts',
  'test/unit/code-mode/render-output.test.ts',
  'test/unit/code-mode/bridge.test.ts',
  'test/unit/code-mode/run-code.test.ts',
  'test/unit/sdk/sdk.test.ts',
  'test/unit/sdk/sdk-typescript.test.ts',
  'test/unit/mcp/import-portable.test.ts',
  'test/unit/approvals/**/*.test.ts',
  'test/unit/catalog/**/*.test.ts',
  'test/unit/json/**/*.test.ts',
  'test/unit/telemetry/portable.test.ts',
  // Python's Web Workers (the Node twin of each is its `.test.ts`).
  'test/unit/python/*.browser.test.ts',
]

/** Approval suites under the glob above that import Node (`node:fs`, `toolyard/node`). */
const NODE_ONLY_APPROVAL_SUITES = [
  'test/unit/approvals/bound-decisions.test.ts',
  'test/unit/approvals/broker-hygiene.test.ts',
  'test/unit/approvals/principal.test.ts',
  'test/unit/approvals/principal-resume.test.ts',
  // Runs every hostile spelling in QuickJS end to end; the scan itself runs in Chromium through plan.test.ts.
  'test/unit/approvals/plan-walkaround.test.ts',
]

/**
 * The browser project, standalone: real Chromium through Playwright, running the
 * CodeRuntime contract suite against `createBrowserWorkerRuntime`, the browser-specific
 * runtime tests, and the platform-neutral core unit suites. `npx vitest run --config
 * vitest.browser.config.ts`. The same block is meant to join vitest.config.ts's projects.
 */
export default defineConfig({
  // Vite's "[optimizer] scanning/bundling dependencies..." lines on a fresh clone read as news in a quiet run.
  plugins: [quietOptimizerProgress()],
  // Pre-bundled up front: discovering them mid-run makes vite reload the page under a test.
  optimizeDeps: {
    // The QuickJS variant and MicroPython find its wasm next to itself (`new URL(…, import.meta.url)`):
    // pre-bundling would move it away from the file.
    exclude: ['@jitl/quickjs-wasmfile-release-sync', 'quickjs-emscripten-core', '@micropython/micropython-webassembly-pyscript'],
    include: [
      'comlink',
      'sucrase',
      'sucrase/dist/index.js',
      'sucrase/dist/parser/index.js',
      'sucrase/dist/parser/tokenizer/keywords.js',
      'sucrase/dist/parser/tokenizer/types.js',
      'fast-check',
      // test/unit/schema/ajv-differential.test.ts (the reference validator) and the HTTP error
      // class the approval suites reach: found mid-run, they printed vite's "new dependencies
      // optimized" and "reloading" lines.
      'ajv',
      'hono/http-exception',
      // test/browser/preflight.test.ts: the compiler, imported by the preflight Web Worker.
      'typescript',
      // test/unit/mcp/import-portable.test.ts: a real SDK Server + Client over the in-memory transport.
      '@modelcontextprotocol/sdk/client/index.js',
      '@modelcontextprotocol/sdk/server/index.js',
      '@modelcontextprotocol/sdk/inMemory.js',
      '@modelcontextprotocol/sdk/types.js',
    ],
  },
  test: {
    name: 'browser',
    include: ['test/browser/**/*.test.ts', ...CORE_UNIT_SUITES],
    // Listing exclude replaces vitest's defaults. The approvals suites that need Node (a file
    // store, the node sandbox) run in the node project only.
    // runtime-wiring sends an `Origin` header, which a browser's fetch drops (a forbidden header).
    exclude: ['**/node_modules/**', ...NODE_ONLY_APPROVAL_SUITES, 'test/unit/registry/runtime-wiring.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    browser: {
      enabled: true,
      headless: true,
      provider: playwright({
        launchOptions: {
          executablePath: '/usr/bin/chromium',
          args: [
            '--no-sandbox',
            '--disable-gpu',
            '--disable-quic',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
          ],
        },
      }),
      instances: [{ browser: 'chromium' }],
      // Failure screenshots would land beside the tests; the assertion output is enough.
      screenshotFailures: false,
    },
  },
})
