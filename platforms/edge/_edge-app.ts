/**
 * What the edge Worker and its Durable Objects share: bindings, Code Mode budgets, the tools
 * app and local shapes of Cloudflare's bindings. Private to platforms/edge.
 *
 * @module
 */
import { metrics, trace } from '@opentelemetry/api'
import quickJsWasm from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { ToolError } from '../../src/errors.js'
import { SANDBOX_DEFAULT_LIMITS } from '../../src/code-runtime/sandbox-runtime.js'
import { bearerToken, timingSafeEqualText } from '../../src/http/index.js'
import type { Role, TokenOptions, ToolsAppOptions } from '../../src/http/index.js'
import type { ToolTelemetryOptions } from '../../src/telemetry/index.js'
import pythonWasm from '../python/_micropython-bounded.wasm'
import { createPythonRuntime, type PythonCodeRuntime } from '../python/index.js'
import { createQuickJsRuntime, type QuickJsCodeRuntime } from '../quickjs/index.js'

/** A Durable Object stub: the Worker and the objects talk to each other over `fetch`. */
export interface DurableObjectStubLike {
  fetch(request: Request): Promise<Response>
}

/** A Durable Object namespace binding (`env.RUNS`, `env.RUN_INDEX`). */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown
  get(id: unknown): DurableObjectStubLike
}

/** The bindings the Worker and its objects read (wrangler.toml `[vars]`, secrets, `[[durable_objects.bindings]]`). */
export interface EdgeEnv {
  /**
   * The agents' bearer token (role `run`: runs and direct executes, its own runs; 16–4096
   * printable ASCII characters); `wrangler secret put TOOLYARD_TOKEN`.
   */
  readonly TOOLYARD_TOKEN?: string
  /**
   * The person's bearer token (roles `run` + `approve`: also lists and decides approvals and
   * reads every run); `wrangler secret put TOOLYARD_APPROVER_TOKEN`. At least one of the two is needed.
   */
  readonly TOOLYARD_APPROVER_TOKEN?: string
  /** Optional comma-separated CORS allowlist of exact origins (`https://a.example,https://b.example`). */
  readonly TOOLYARD_CORS_ORIGINS?: string
  /** How long a pending approval waits for a person, in ms (a positive integer up to 2147483647); default 5 minutes. */
  readonly TOOLYARD_APPROVAL_TIMEOUT_MS?: string
  /** The `ToolyardRun` objects, one per `/v1/runs` run. Absent: runs live in the Worker's isolate (not durable). */
  readonly RUNS?: DurableObjectNamespaceLike
  /** The `ToolyardRunIndex` object: pending approvals of every run, and which object owns each run. */
  readonly RUN_INDEX?: DurableObjectNamespaceLike
}

/**
 * The telemetry of the Worker's runtime and of each run object's: the `@opentelemetry/api`
 * globals, so a deployment exports spans and metrics by registering providers in its entry
 * module (docs/observability.md, "At the edge"). None registered: the API's no-ops. Called
 * when a runtime is built, after the entry module registered them (a meter is not a proxy).
 */
export function edgeTelemetry(): ToolTelemetryOptions {
  return { tracer: trace.getTracer('toolyard'), meter: metrics.getMeter('toolyard') }
}

/**
 * Code Mode budgets for the edge: the sandbox's own defaults everywhere (compute 5 s,
 * wall clock 60 s), so a program behaves the same on every platform. A Worker isolate
 * has 128 MB for everything, and each run gets its own fixed wasm memory, so runs stay
 * small (QuickJS needs 16 MB to start). The compute budget sits well below the paid
 * plans' default 30 s CPU limit per request, so our `timeout` result arrives before
 * Cloudflare kills the request; the Free plan's 10 ms CPU limit is far below it
 * (docs/deployment.md).
 */
export const EDGE_CODE_LIMITS = { computeMs: SANDBOX_DEFAULT_LIMITS.computeMs, maxWallMs: SANDBOX_DEFAULT_LIMITS.maxWallMs, memoryMb: 32 } as const

/** The code runtimes of an edge tools runtime: `codeRuntime` and `codeRuntimes` of `createToolRuntime`. */
export interface EdgeCodeRuntimes {
  /** TypeScript on QuickJS inline: the language the model is shown. */
  readonly codeRuntime: QuickJsCodeRuntime
  /** Python on the metered MicroPython inline: programs sent with `"language": "python"`. */
  readonly codeRuntimes: readonly [PythonCodeRuntime]
}

/**
 * The Worker's and each run object's code runtimes, both inline with {@link EDGE_CODE_LIMITS}
 * and their wasm imported as modules (workerd compiles wasm only from modules).
 */
export function createEdgeCodeRuntimes(): EdgeCodeRuntimes {
  const codeRuntime = createQuickJsRuntime({ wasmModule: quickJsWasm, ...EDGE_CODE_LIMITS })
  return { codeRuntime, codeRuntimes: [createPythonRuntime({ wasmModule: pythonWasm, ...EDGE_CODE_LIMITS })] }
}

/**
 * How often a call waiting in the Worker's isolate (`POST /v1/run`) reads the index for a
 * decision taken in another isolate: 1 s, one index request a second per isolate with a
 * waiting call.
 */
export const EDGE_APPROVAL_POLL_MS = 1_000

/**
 * The same for a call waiting in a `ToolyardRun` object: 30 s, a fallback only. The Worker
 * forwards a decision on a run's approval to the run's object, whose own broker hands it
 * to the waiting call at once (and an object that was evicted is woken by that request).
 */
export const RUN_OBJECT_APPROVAL_POLL_MS = 30_000

/** The most a timer can wait in workerd and Node (2^31 - 1 ms), the broker's own bound. */
const MAX_APPROVAL_TIMEOUT_MS = 2_147_483_647

/** `TOOLYARD_APPROVAL_TIMEOUT_MS` read: absent → default; `'malformed'` → the app stays closed. */
function approvalTimeout(env: EdgeEnv): number | undefined | 'malformed' {
  const text = env.TOOLYARD_APPROVAL_TIMEOUT_MS
  if (text === undefined || text === '') return undefined
  const ms = typeof text === 'string' && /^[1-9][0-9]{0,9}$/.test(text.trim()) ? Number(text.trim()) : Number.NaN
  return ms <= MAX_APPROVAL_TIMEOUT_MS ? ms : 'malformed'
}

/** The approval broker's `timeoutMs` option from the environment (`{}`: the default). */
export function approvalTimeoutOption(env: EdgeEnv): { readonly timeoutMs?: number } {
  const ms = approvalTimeout(env)
  return typeof ms === 'number' ? { timeoutMs: ms } : {}
}

/** The secrets that carry tokens, with the roles and principal id each grants. */
const TOKEN_SECRETS: readonly { readonly name: 'TOOLYARD_TOKEN' | 'TOOLYARD_APPROVER_TOKEN'; readonly roles: readonly Role[]; readonly id: string }[] = [
  { name: 'TOOLYARD_TOKEN', roles: ['run'], id: 'agent' },
  { name: 'TOOLYARD_APPROVER_TOKEN', roles: ['run', 'approve'], id: 'approver' },
]

function secretOf(env: EdgeEnv, name: (typeof TOKEN_SECRETS)[number]['name']): string {
  const value = env[name]
  return typeof value === 'string' ? value : ''
}

/** The tokens the environment sets, each with the secret it came from. */
function tokensOf(env: EdgeEnv): { readonly secret: string; readonly entry: TokenOptions & { readonly id: string } }[] {
  return TOKEN_SECRETS.filter((secret) => secretOf(env, secret.name) !== '').map((secret) => ({
    secret: secret.name,
    entry: { token: secretOf(env, secret.name), roles: secret.roles, id: secret.id },
  }))
}

function originsOf(env: EdgeEnv): string {
  return typeof env.TOOLYARD_CORS_ORIGINS === 'string' ? env.TOOLYARD_CORS_ORIGINS : ''
}

/** A key that changes when a token or the allowlist does (an isolate rebuilds its app then). */
export function configKey(env: EdgeEnv): string {
  return `${secretOf(env, 'TOOLYARD_TOKEN')}\u0000${secretOf(env, 'TOOLYARD_APPROVER_TOKEN')}\u0000${originsOf(env)}\u0000${String(env.TOOLYARD_APPROVAL_TIMEOUT_MS)}`
}

/**
 * Builds an app from the environment's tokens and CORS allowlist: `make(options, closed)`
 * gets the options of `createToolsApp` (with `base` merged in): `TOOLYARD_TOKEN` is a `run`
 * token (principal `agent`), `TOOLYARD_APPROVER_TOKEN` a `run` + `approve` one (principal
 * `approver`). Without either, or with a malformed token or allowlist, `closed` is true and
 * the options answer 503 `NOT_CONFIGURED` (naming the variable, never echoing the secret)
 * instead of an open API or a 500 on every request.
 */
export function buildEdgeApp<A>(env: EdgeEnv, base: Omit<ToolsAppOptions, 'token' | 'tokens' | 'cors' | 'auth' | 'notConfigured'>, make: (options: ToolsAppOptions, closed: boolean) => A): A {
  const tokens = tokensOf(env)
  const closed = (message: string): A => make({ ...base, notConfigured: message }, true)
  if (tokens.length === 0) return closed('set the TOOLYARD_TOKEN secret (agents: run) and the TOOLYARD_APPROVER_TOKEN secret (a person: run + approve) to enable the API (deployed: `npx wrangler secret put TOOLYARD_TOKEN`; locally under `npm run dev:edge`: `cp .dev.vars.example .dev.vars`, put tokens of 16+ characters in it, restart)')
  if (approvalTimeout(env) === 'malformed') return closed(`TOOLYARD_APPROVAL_TIMEOUT_MS is malformed: a whole number of milliseconds from 1 to ${MAX_APPROVAL_TIMEOUT_MS}`)
  const corsOrigins = originsOf(env)
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '')
  try {
    return make({ ...base, tokens: tokens.map((t) => t.entry), ...(corsOrigins.length > 0 ? { cors: { origins: corsOrigins } } : {}) }, false)
  } catch (error) {
    if (!(error instanceof ToolError) || error.code !== 'INVALID_OPTIONS') throw error
    const message = error.message.replace(/^createToolsApp: /, '')
    // `tokens[i]…` names the entry: said as its secret, in words that fit one secret.
    const at = /^tokens\[(\d+)\]\.token (.*)$/.exec(message)
    if (at !== null) {
      const secret = tokens[Number(at[1])]?.secret ?? 'TOOLYARD_TOKEN'
      const why = at[2]!.replace(/is the same as tokens\[\d+\]\.token: each token names one principal/, 'is the same as TOOLYARD_TOKEN: the two secrets must differ')
      return closed(`${secret} is malformed: it ${why}`)
    }
    return closed(`${message.includes('cors') ? 'TOOLYARD_CORS_ORIGINS' : 'TOOLYARD_TOKEN'} is malformed: ${message}`)
  }
}

/**
 * The principal of the bearer token `request` carries (its id and roles; every configured
 * token compared through SHA-256 digests, no early exit), or `undefined` for none. The
 * Worker forwards a request to a Durable Object only with a token, and a decision only with
 * `approve`: an unauthenticated client must not be able to create objects (each one costs),
 * and every refusal (401, 403, 503) is answered by the Worker's own app, in the API's words.
 */
export async function tokenPrincipal(request: Request, env: EdgeEnv): Promise<{ readonly id: string; readonly roles: readonly Role[] } | undefined> {
  const presented = bearerToken(request.headers.get('Authorization'))
  if (presented === undefined) return undefined
  let found: { readonly id: string; readonly roles: readonly Role[] } | undefined
  for (const { entry } of tokensOf(env)) {
    if ((await timingSafeEqualText(presented, entry.token)) && found === undefined) found = { id: entry.id, roles: entry.roles }
  }
  return found
}

/** A run id as the API hands it out: a UUID. */
export const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
