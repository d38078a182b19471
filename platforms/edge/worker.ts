/**
 * The Cloudflare Worker entry (see wrangler.toml): the same registry, demo tools and
 * HTTP API as `npm start`, with Code Mode on QuickJS wasm (workerd has no `Worker` and
 * forbids `eval`). The bearer token comes from the `TOOLYARD_TOKEN` secret
 * (`npx wrangler secret put TOOLYARD_TOKEN`); without it, or with a malformed one, every
 * `/v1` route but `/v1/health` answers 503 `NOT_CONFIGURED` rather than serving an open API.
 *
 * With the Durable Object bindings of wrangler.toml (`RUNS`, `RUN_INDEX`), runs are
 * durable: each `/v1/runs` run lives in its own `ToolyardRun` object (run-object.ts), which
 * the Worker names by the run's id and forwards the run's requests to; pending approvals
 * of every run live in the `ToolyardRunIndex` object (run-index.ts), through which this
 * Worker lists (`GET /v1/approvals`) and decides (`POST /v1/approvals/:id`) them, then wakes
 * the run's object. `write_file` and `edit_file` ask a person, as in `npm start`.
 * Without the bindings, runs live in the isolate that started them and nothing asks.
 *
 * docs/deployment.md explains deploying it, the bindings and the platform limits.
 *
 * @module
 */
import type { ExecutionContext } from 'hono'
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { askBeforeWriting } from '../../demo/tools/approval-gate.js'
import { registerDemoTools } from '../../demo/tools/index.js'
import { createApprovalBroker } from '../../src/approvals/index.js'
import { runKeySegment } from '../../src/durable/runs.js'
import { createSessionLogHub, createToolsApp } from '../../src/http/index.js'
import { createMcpApp } from '../../src/mcp/index.js'
import { createToolRuntime } from '../../src/registry/index.js'
import { createQuickJsRuntime, type QuickJsCodeRuntime } from '../quickjs/index.js'
import { buildEdgeApp, carriesToken, configKey, EDGE_APPROVAL_POLL_MS, EDGE_CODE_LIMITS, RUN_ID, type DurableObjectNamespaceLike, type EdgeEnv } from './_edge-app.js'
import { createIndexStore } from './run-index.js'
import { OWNER_PREFIX, RUN_ID_HEADER, WAKE_PATH } from './run-object.js'

export type { EdgeEnv } from './_edge-app.js'
export { ToolyardRun } from './run-object.js'
export { ToolyardRunIndex } from './run-index.js'

type App = ReturnType<typeof createToolsApp>

/** One app per isolate and configuration: the registry is built once and reused across requests. */
let cached: { readonly key: string; readonly app: App; readonly sandbox: QuickJsCodeRuntime } | undefined

function build(env: EdgeEnv, sandbox: QuickJsCodeRuntime): App {
  const sessionLog = createSessionLogHub()
  // With the index bound, approvals live there: any isolate lists and decides them.
  const approvals = env.RUN_INDEX === undefined ? undefined : createApprovalBroker({ store: createIndexStore(env.RUN_INDEX), pollIntervalMs: EDGE_APPROVAL_POLL_MS })
  const runtime = createToolRuntime({ mode: 'both', codeRuntime: sandbox, sessionLog, ...(approvals === undefined ? {} : { approval: approvals.handler }) })
  registerDemoTools(runtime)
  if (approvals !== undefined) askBeforeWriting(runtime)
  return buildEdgeApp(env, { sessionLog, ...(approvals === undefined ? {} : { approvals }) }, (options, closed) => {
    const mcp = closed
      ? createMcpApp(runtime, { notConfigured: options.notConfigured as string })
      : createMcpApp(runtime, { token: options.token as string, agent: agentFromQuery, ...(options.cors === undefined ? {} : { allowedOrigins: options.cors.origins }) })
    const app = createToolsApp(runtime, options)
    // The MCP endpoint (Streamable HTTP, same token) lives beside the API at `/mcp`.
    app.route('/mcp', mcp)
    return app
  })
}

/** `/mcp?agent=<id>` serves that agent's layer. */
function agentFromQuery(request: Request): string | undefined {
  return new URL(request.url).searchParams.get('agent') ?? undefined
}

function appFor(env: EdgeEnv): NonNullable<typeof cached> {
  const key = configKey(env)
  if (cached?.key !== key) {
    const sandbox = createQuickJsRuntime({ wasmModule, ...EDGE_CODE_LIMITS })
    cached = { key, app: build(env, sandbox), sandbox }
  }
  return cached
}

/** The run a path names (`/v1/runs` → a new one; `/v1/runs/<uuid>[/events]` → that one), or `undefined`. */
function runOf(request: Request): string | undefined {
  const path = new URL(request.url).pathname
  if (path === '/v1/runs' && request.method === 'POST') return crypto.randomUUID()
  const match = /^\/v1\/runs\/([^/]+)(?:\/events)?$/.exec(path)
  return match !== null && RUN_ID.test(match[1]!) ? match[1] : undefined
}

/** Forwards a run's request to its object, the public id in a header only this Worker sets. */
function toRunObject(runs: DurableObjectNamespaceLike, id: string, request: Request): Promise<Response> {
  const headers = new Headers(request.headers)
  headers.set(RUN_ID_HEADER, id)
  return runs.get(runs.idFromName(id)).fetch(new Request(request, { headers }))
}

/**
 * After a decision answered 200, wakes the object owning the decided call's run: if it was
 * evicted, it resumes the run, which re-attaches to its approval and reads the decision.
 */
async function wakeOwner(env: EdgeEnv, answer: Response): Promise<void> {
  if (env.RUNS === undefined || env.RUN_INDEX === undefined || answer.status !== 200) return
  const { approval } = (await answer.json()) as { approval?: { kind?: string; callId?: string; parentCallId?: string } }
  const runCallId = approval?.kind === 'plan' ? approval.callId : approval?.parentCallId
  if (typeof runCallId !== 'string') return
  const owner = await createIndexStore(env.RUN_INDEX).get(OWNER_PREFIX + runKeySegment(runCallId))
  if (owner === undefined || !RUN_ID.test(owner.value)) return
  await env.RUNS.get(env.RUNS.idFromName(owner.value)).fetch(new Request(`https://toolyard-run.internal${WAKE_PATH}`, { method: 'POST' }))
}

/** The Worker's module export: runs go to their objects; every other request to the tools app of this isolate. */
export default {
  async fetch(request: Request, env: EdgeEnv, executionContext: ExecutionContext): Promise<Response> {
    env ??= {}
    const runs = env.RUNS
    // Only a request with the right token reaches an object (objects cost); the app answers every refusal.
    const run = runs === undefined || env.RUN_INDEX === undefined ? undefined : runOf(request)
    if (run !== undefined && (await carriesToken(request, env))) return toRunObject(runs!, run, request)
    const { app, sandbox } = appFor(env)
    // workerd drops a request's timers once it answers, so the next run's QuickJS sandbox
    // is built here, after the response, for requests that may run code (≈1 ms cold runs).
    if (request.method === 'POST') executionContext.waitUntil(sandbox.warm())
    const response = await app.fetch(request, env, executionContext)
    if (request.method === 'POST' && /^\/v1\/approvals\/[^/]+$/.test(new URL(request.url).pathname)) {
      executionContext.waitUntil(wakeOwner(env, response.clone()).catch((error: unknown) => console.error('toolyard: waking a run object failed', error)))
    }
    return response
  },
}
