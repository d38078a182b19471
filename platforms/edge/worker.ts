/**
 * The Cloudflare Worker entry (see wrangler.toml): the same registry, demo tools and
 * HTTP API as `npm start`, with Code Mode on QuickJS wasm (workerd has no `Worker` and
 * forbids `eval`). The bearer token comes from the `TOOLYARD_TOKEN` secret
 * (`npx wrangler secret put TOOLYARD_TOKEN`); without it, or with a malformed one, every
 * `/v1` route but `/v1/health` answers 503 `NOT_CONFIGURED` rather than serving an open API.
 *
 * docs/deployment.md explains deploying it, the bindings and the platform limits.
 *
 * @module
 */
import type { ExecutionContext } from 'hono'
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { createToolRuntime } from '../../src/registry/index.js'
import { createSessionLogHub, createToolsApp } from '../../src/http/index.js'
import type { ToolsAppOptions } from '../../src/http/index.js'
import { ToolError } from '../../src/errors.js'
import { registerDemoTools } from '../../demo/tools/index.js'
import { SANDBOX_DEFAULT_LIMITS } from '../../src/code-runtime/sandbox-runtime.js'
import { createQuickJsRuntime, type QuickJsCodeRuntime } from '../quickjs/index.js'
import { createMcpApp } from '../../src/mcp/index.js'

/** The bindings this Worker reads (wrangler.toml `[vars]` and secrets). */
export interface EdgeEnv {
  /** The bearer token clients must send (16–4096 printable ASCII characters); set it with `wrangler secret put TOOLYARD_TOKEN`. */
  readonly TOOLYARD_TOKEN?: string
  /** Optional comma-separated CORS allowlist of exact origins (`https://a.example,https://b.example`). */
  readonly TOOLYARD_CORS_ORIGINS?: string
}

/**
 * Code Mode budgets for the edge: the sandbox's own defaults everywhere (compute 5 s,
 * wall clock 60 s), so a program behaves the same on every platform. A Worker isolate
 * has 128 MB for everything, and each run gets its own fixed wasm memory, so runs stay
 * small (QuickJS needs 16 MB to start). The compute budget sits well below the paid
 * plans' default 30 s CPU limit per request, so our `timeout` result arrives before
 * Cloudflare kills the request; the Free plan's 10 ms CPU limit is far below it
 * (docs/deployment.md). Not exported: workerd treats a main module's named exports as
 * entrypoints.
 */
const EDGE_CODE_LIMITS = { computeMs: SANDBOX_DEFAULT_LIMITS.computeMs, maxWallMs: SANDBOX_DEFAULT_LIMITS.maxWallMs, memoryMb: 32 } as const

type App = ReturnType<typeof createToolsApp>

/** One app per isolate and configuration: the registry is built once and reused across requests. */
let cached: { readonly key: string; readonly app: App; readonly sandbox: QuickJsCodeRuntime } | undefined

function build(token: string, origins: string, sandbox: QuickJsCodeRuntime): App {
  const sessionLog = createSessionLogHub()
  const runtime = createToolRuntime({ mode: 'both', codeRuntime: sandbox, sessionLog })
  registerDemoTools(runtime)
  const closed = (message: string): App =>
    withMcp(createToolsApp(runtime, { notConfigured: message, sessionLog }), createMcpApp(runtime, { notConfigured: message }))
  if (token === '') return closed('set the TOOLYARD_TOKEN secret to enable the API')
  const corsOrigins = origins
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '')
  const options: ToolsAppOptions = { token, sessionLog, ...(corsOrigins.length > 0 ? { cors: { origins: corsOrigins } } : {}) }
  try {
    return withMcp(
      createToolsApp(runtime, options),
      createMcpApp(runtime, { token, agent: agentFromQuery, ...(corsOrigins.length > 0 ? { allowedOrigins: corsOrigins } : {}) }),
    )
  } catch (error) {
    // A malformed secret or allowlist must not turn into an open API or a 500 on every
    // request: say what is wrong (without echoing the secret) and stay closed.
    if (!(error instanceof ToolError) || error.code !== 'INVALID_OPTIONS') throw error
    const what = error.message.includes('cors') ? 'TOOLYARD_CORS_ORIGINS' : 'TOOLYARD_TOKEN'
    return closed(`${what} is malformed: ${error.message.replace(/^createToolsApp: /, '')}`)
  }
}

/** The MCP endpoint (Streamable HTTP, same token) lives beside the API at `/mcp`. */
function withMcp(app: App, mcp: ReturnType<typeof createMcpApp>): App {
  app.route('/mcp', mcp)
  return app
}

/** `/mcp?agent=<id>` serves that agent's layer. */
function agentFromQuery(request: Request): string | undefined {
  return new URL(request.url).searchParams.get('agent') ?? undefined
}

function appFor(env: EdgeEnv): NonNullable<typeof cached> {
  const token = typeof env.TOOLYARD_TOKEN === 'string' ? env.TOOLYARD_TOKEN : ''
  const origins = typeof env.TOOLYARD_CORS_ORIGINS === 'string' ? env.TOOLYARD_CORS_ORIGINS : ''
  const key = `${token}\u0000${origins}`
  if (cached?.key !== key) {
    const sandbox = createQuickJsRuntime({ wasmModule, ...EDGE_CODE_LIMITS })
    cached = { key, app: build(token, origins, sandbox), sandbox }
  }
  return cached
}

/** The Worker's module export: every request goes to the tools app of this isolate. */
export default {
  fetch(request: Request, env: EdgeEnv, executionContext: ExecutionContext): Response | Promise<Response> {
    const { app, sandbox } = appFor(env ?? {})
    // workerd drops a request's timers once it answers, so the next run's QuickJS sandbox
    // is built here, after the response, for requests that may run code (≈1 ms cold runs).
    if (request.method === 'POST') executionContext.waitUntil(sandbox.warm())
    return app.fetch(request, env, executionContext)
  },
}
