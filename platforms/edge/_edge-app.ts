/**
 * What the edge Worker (worker.ts) and its Durable Objects (run-object.ts, run-index.ts)
 * share: the bindings they read, the Code Mode budgets, the tools app built from the
 * token and CORS settings, and the small local shapes of Cloudflare's bindings (no
 * Cloudflare typings are imported). Private to platforms/edge.
 *
 * @module
 */
import { ToolError } from '../../src/errors.js'
import { SANDBOX_DEFAULT_LIMITS } from '../../src/code-runtime/sandbox-runtime.js'
import { bearerToken, timingSafeEqualText } from '../../src/http/index.js'
import type { ToolsAppOptions } from '../../src/http/index.js'

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
  /** The bearer token clients must send (16–4096 printable ASCII characters); set it with `wrangler secret put TOOLYARD_TOKEN`. */
  readonly TOOLYARD_TOKEN?: string
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
 * Code Mode budgets for the edge: the sandbox's own defaults everywhere (compute 5 s,
 * wall clock 60 s), so a program behaves the same on every platform. A Worker isolate
 * has 128 MB for everything, and each run gets its own fixed wasm memory, so runs stay
 * small (QuickJS needs 16 MB to start). The compute budget sits well below the paid
 * plans' default 30 s CPU limit per request, so our `timeout` result arrives before
 * Cloudflare kills the request; the Free plan's 10 ms CPU limit is far below it
 * (docs/deployment.md).
 */
export const EDGE_CODE_LIMITS = { computeMs: SANDBOX_DEFAULT_LIMITS.computeMs, maxWallMs: SANDBOX_DEFAULT_LIMITS.maxWallMs, memoryMb: 32 } as const

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

function tokenOf(env: EdgeEnv): string {
  return typeof env.TOOLYARD_TOKEN === 'string' ? env.TOOLYARD_TOKEN : ''
}

function originsOf(env: EdgeEnv): string {
  return typeof env.TOOLYARD_CORS_ORIGINS === 'string' ? env.TOOLYARD_CORS_ORIGINS : ''
}

/** A key that changes when the token or the allowlist does (an isolate rebuilds its app then). */
export function configKey(env: EdgeEnv): string {
  return `${tokenOf(env)}\u0000${originsOf(env)}\u0000${String(env.TOOLYARD_APPROVAL_TIMEOUT_MS)}`
}

/**
 * Builds an app from the environment's token and CORS allowlist: `make(options, closed)`
 * gets the options of `createToolsApp` (with `base` merged in). Without the token, or with
 * a malformed token or allowlist, `closed` is true and the options answer 503
 * `NOT_CONFIGURED` (naming the variable, never echoing the secret) instead of an open API
 * or a 500 on every request.
 */
export function buildEdgeApp<A>(env: EdgeEnv, base: Omit<ToolsAppOptions, 'token' | 'cors' | 'auth' | 'notConfigured'>, make: (options: ToolsAppOptions, closed: boolean) => A): A {
  const token = tokenOf(env)
  const closed = (message: string): A => make({ ...base, notConfigured: message }, true)
  if (token === '') return closed('set the TOOLYARD_TOKEN secret to enable the API')
  if (approvalTimeout(env) === 'malformed') return closed(`TOOLYARD_APPROVAL_TIMEOUT_MS is malformed: a whole number of milliseconds from 1 to ${MAX_APPROVAL_TIMEOUT_MS}`)
  const corsOrigins = originsOf(env)
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '')
  try {
    return make({ ...base, token, ...(corsOrigins.length > 0 ? { cors: { origins: corsOrigins } } : {}) }, false)
  } catch (error) {
    if (!(error instanceof ToolError) || error.code !== 'INVALID_OPTIONS') throw error
    const what = error.message.includes('cors') ? 'TOOLYARD_CORS_ORIGINS' : 'TOOLYARD_TOKEN'
    return closed(`${what} is malformed: ${error.message.replace(/^createToolsApp: /, '')}`)
  }
}

/**
 * Whether `request` carries the configured bearer token (compared through SHA-256
 * digests, no early exit). The Worker forwards a request to a Durable Object only then:
 * an unauthenticated client must not be able to create objects (each one costs), and every
 * refusal (401, 403, 503) is answered by the Worker's own app, in the API's words.
 */
export async function carriesToken(request: Request, env: EdgeEnv): Promise<boolean> {
  const token = tokenOf(env)
  const presented = bearerToken(request.headers.get('Authorization'))
  return token !== '' && presented !== undefined && (await timingSafeEqualText(presented, token))
}

/** A run id as the API hands it out: a UUID. */
export const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
