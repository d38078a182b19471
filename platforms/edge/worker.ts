/**
 * The Cloudflare Worker entry: the `npm start` registry and HTTP API, Code Mode on QuickJS
 * (TypeScript) and MicroPython (Python), durable runs through `RUNS` (docs/deployment.md).
 * @module
 */
import type { ExecutionContext } from 'hono'
import { askBeforeWriting } from '../../demo/tools/approval-gate.js'
import { registerDemoTools } from '../../demo/tools/index.js'
import { runOfOpenApproval } from '../../src/approvals/index.js'
import { runKeySegment } from '../../src/durable/runs.js'
import { createToolsApp } from '../../src/http/index.js'
import { createToolRuntime } from '../../src/registry/index.js'
import { approvalTimeoutOption, buildEdgeApp, configKey, createEdgeCodeRuntimes, EDGE_APPROVAL_POLL_MS, edgeTelemetry, RUN_ID, tokenPrincipal, type DurableObjectNamespaceLike, type EdgeCodeRuntimes, type EdgeEnv } from './_edge-app.js'
import { createIndexStore } from './run-index.js'
import { OWNER_PREFIX, RUN_ID_HEADER, RUN_OWNER_PREFIX } from './run-object.js'

export type { EdgeEnv } from './_edge-app.js'
export { ToolyardRun } from './run-object.js'
export { ToolyardRunIndex } from './run-index.js'

type App = ReturnType<typeof createToolsApp>

/** One app per isolate and configuration: the registry is built once and reused across requests. */
let cached: { readonly key: string; readonly app: App; readonly code: EdgeCodeRuntimes } | undefined

function build(env: EdgeEnv, code: EdgeCodeRuntimes): App {
  // With the index bound, approvals live there: any isolate lists and decides them.
  const approvals = env.RUN_INDEX === undefined ? undefined : { store: createIndexStore(env.RUN_INDEX), pollIntervalMs: EDGE_APPROVAL_POLL_MS, ...approvalTimeoutOption(env) }
  // TypeScript is the model's language; `"language": "python"` runs on the Python runtime.
  const runtime = createToolRuntime({ mode: 'both', ...code, telemetry: edgeTelemetry(), ...(approvals === undefined ? {} : { approvals }) })
  registerDemoTools(runtime)
  if (approvals !== undefined) askBeforeWriting(runtime)
  // The MCP endpoint (Streamable HTTP, same tokens and origins) lives beside the API at `/mcp`.
  return buildEdgeApp(env, { mcp: { agent: agentFromQuery } }, (options) => createToolsApp(runtime, options))
}

/** `/mcp?agent=<id>` serves that agent's layer. */
function agentFromQuery(request: Request): string | undefined {
  return new URL(request.url).searchParams.get('agent') ?? undefined
}

function appFor(env: EdgeEnv): NonNullable<typeof cached> {
  const key = configKey(env)
  if (cached?.key !== key) {
    const code = createEdgeCodeRuntimes()
    cached = { key, app: build(env, code), code }
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

/** An approval id as the stored broker makes it: `<hash>.<uuid>`, the hash naming its record (`approvals/open/<hash>`). */
const APPROVAL_ID = /^([0-9a-f]{32})\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * The run object owning a pending approval, from the index: its record names the run's
 * call (docs/durability.md, "Approvals in the store"), and the run object registered
 * itself as that call's owner. `undefined` for an approval of a run in this isolate
 * (`POST /v1/run`), a settled one or an unknown id: the Worker's app answers those.
 */
async function ownerOfApproval(index: DurableObjectNamespaceLike, path: string): Promise<string | undefined> {
  const id = path.slice('/v1/approvals/'.length)
  if (!APPROVAL_ID.test(id)) return undefined
  const store = createIndexStore(index)
  // The broker's own reading of its record: anything malformed is no owner.
  const runCallId = await runOfOpenApproval(store, id)
  if (runCallId === undefined) return undefined
  const owner = await store.get(OWNER_PREFIX + runKeySegment(runCallId))
  return owner !== undefined && RUN_ID.test(owner.value) ? owner.value : undefined
}

/**
 * Whether a run id a client named is a run of this deployment that `principal` may reach:
 * the index says who started it (its object wrote `edge-run-ids/<id>` before answering 202,
 * and removes it with its storage). Its starter reaches it, and a token with `approve` or
 * `admin` too (the object's app decides what it may read: runs that asked). Unknown, or
 * another principal's run for a `run` token: `false`, answered 404 `RUN_NOT_FOUND` by the
 * Worker's app, so no client-typed id creates or wakes an object.
 */
async function mayReachRun(index: DurableObjectNamespaceLike, run: string, principal: { readonly id: string; readonly roles: readonly string[] }): Promise<boolean> {
  const owner = await createIndexStore(index).get(RUN_OWNER_PREFIX + run)
  if (owner === undefined) return false
  return owner.value === principal.id || principal.roles.includes('approve') || principal.roles.includes('admin')
}

/** Which run object a request goes to, or `undefined` for the Worker's own app. */
async function objectOf(request: Request, env: EdgeEnv): Promise<string | undefined> {
  if (env.RUNS === undefined || env.RUN_INDEX === undefined) return undefined
  const path = new URL(request.url).pathname
  const decision = request.method === 'POST' && path.startsWith('/v1/approvals/')
  const run = decision ? undefined : runOf(request)
  if (!decision && run === undefined) return undefined
  // Only a request with a valid token reaches an object (objects cost), and a decision only with
  // `approve` (nothing is read for it otherwise); the app answers every refusal.
  const principal = await tokenPrincipal(request, env)
  if (principal === undefined) return undefined
  const { roles } = principal
  if (run === undefined) return roles.includes('approve') || roles.includes('admin') ? ownerOfApproval(env.RUN_INDEX, path) : undefined
  // A new run gets its id here; any other id came from the client: the index must know it first.
  if (path === '/v1/runs') return run
  return (await mayReachRun(env.RUN_INDEX, run, principal)) ? run : undefined
}

/** The Worker's module export: runs go to their objects; every other request to the tools app of this isolate. */
export default {
  async fetch(request: Request, env: EdgeEnv, executionContext: ExecutionContext): Promise<Response> {
    env ??= {}
    const run = await objectOf(request, env)
    if (run !== undefined) return toRunObject(env.RUNS!, run, request)
    const { app, code } = appFor(env)
    // workerd drops a request's timers once it answers, so the next run's QuickJS sandbox
    // is built here, after the response, for requests that may run code (≈1 ms cold runs).
    // Python's `warm()` only waits for an interpreter already being built (none kept idle: 32 MB each).
    if (request.method === 'POST') executionContext.waitUntil(Promise.all([code.codeRuntime.warm(), code.codeRuntimes[0].warm()]))
    return app.fetch(request, env, executionContext)
  },
}
