/**
 * Bearer tokens: the constant-time comparison, the authentication options the HTTP API and
 * the MCP endpoint share, and the principals tokens resolve to.
 *
 * @module
 */

import type { ScopeKey } from '../types.js'

const encoder = new TextEncoder()

/** SHA-256 of the UTF-8 bytes of `text` (Web Crypto; available in Node, browsers and workerd). */
export async function sha256(text: string | Uint8Array): Promise<Uint8Array> {
  const bytes: Uint8Array<ArrayBuffer> = typeof text === 'string' ? encoder.encode(text) : new Uint8Array(text)
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))
}

/**
 * Compares two 32-byte digests without an early exit, so the time taken does not
 * depend on where they first differ.
 */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  // Stryker disable next-line EqualityOperator: a[length] and b[length] are both undefined; undefined ^ undefined is 0
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number)
  return diff === 0
}

/**
 * Constant-time string equality: both sides are hashed with SHA-256 first, so neither
 * the length nor the common prefix of the secret leaks through timing, then the
 * digests are compared byte by byte without an early exit.
 *
 * @example
 * ```ts
 * if (!(await timingSafeEqualText(presented, expected))) return unauthorized()
 * ```
 */
export async function timingSafeEqualText(a: string, b: string): Promise<boolean> {
  const [da, db] = await Promise.all([sha256(a), sha256(b)])
  return digestsEqual(da, db)
}

/**
 * Reads the token from an `Authorization` header (`Bearer <token>`, scheme
 * case-insensitive). Returns `undefined` when the header is absent or of another scheme.
 */
export function bearerToken(header: string | null | undefined): string | undefined {
  // Stryker disable next-line ConditionalExpression: the pattern cannot match String(null) or String(undefined), so the result is undefined either way
  if (typeof header !== 'string') return undefined
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}

/** What a principal may do: `run` programs and tools (as its agent), `approve` (list and decide approvals), `admin` (everything). */
export type Role = 'run' | 'approve' | 'admin'

/** Every role, in the order messages list them. */
export const ROLES: readonly Role[] = Object.freeze(['run', 'approve', 'admin'])

/** One bearer token and what it may do (`createToolsApp({ tokens })`, `createMcpApp({ tokens })`). */
export interface TokenOptions {
  /** The bearer token (16–4096 printable ASCII characters, no spaces). */
  readonly token: string
  /** A non-empty subset of `run`, `approve`, `admin`. */
  readonly roles: readonly Role[]
  /** Pins a `run` token to one agent layer: a request for another agent answers 403 `FORBIDDEN`. Not with `admin`. */
  readonly agent?: ScopeKey
  /**
   * The principal's stable, non-secret id in run records, approvals and call ids (1–64 of
   * `A-Z a-z 0-9 _ -`, not starting `tok-`). Default `tok-` and 16 hex digits of the
   * token's SHA-256.
   */
  readonly id?: string
}

/** Who sent a request: a token's identity, never the token. */
export interface Principal {
  /** Stable and non-secret (see {@link TokenOptions.id}); `admin` for the `token` shorthand, `anonymous` with `auth: false`. */
  readonly id: string
  readonly roles: readonly Role[]
  /** The agent a `run` principal acts for, when pinned. */
  readonly agent?: ScopeKey
}

/** The authentication options shared by the HTTP API and the MCP endpoint. */
export interface AuthOptions {
  /** Shorthand for one `admin` token: `tokens: [{ token, roles: ['admin'], id: 'admin' }]`. Not together with `tokens`. */
  readonly token?: string
  /** The tokens the server accepts, each with its roles (docs/http-api.md, "Tokens and roles"). At most 64. */
  readonly tokens?: readonly TokenOptions[]
  /** `false` disables authentication (every request acts as `admin`); must be said explicitly, and not together with a token. */
  readonly auth?: false
  /** Truthy → every protected route answers 503 `NOT_CONFIGURED`; a string replaces the message. */
  readonly notConfigured?: boolean | string
  /**
   * Appended to every 401 message: where a client finds a valid token (e.g. "the server
   * prints its tokens at start-up"). It is shown to anyone, so keep secrets and paths out.
   */
  readonly unauthorizedHint?: string
}

/** Resolves a presented bearer token to its principal (every configured token compared, no early exit). */
export interface PrincipalSet {
  identify(presented: string): Promise<Principal | undefined>
}

/** What {@link resolveAuthOptions} answers. */
export interface ResolvedAuth {
  readonly notConfigured: string | undefined
  /** `undefined`: authentication is off (`auth: false`); an app `notConfigured` without a token accepts none. */
  readonly principals: PrincipalSet | undefined
  readonly unauthorizedHint: string | undefined
}

/** The principal of every request when authentication is off. */
export const ANONYMOUS_ADMIN: Principal = Object.freeze({ id: 'anonymous', roles: Object.freeze(['admin'] as Role[]) })

const MAX_TOKENS = 64
const TOKEN_PATTERN = /^[\x21-\x7e]{16,4096}$/
const PRINCIPAL_ID = /^[A-Za-z0-9_-]{1,64}$/
const TOKEN_FIELDS: readonly string[] = ['token', 'roles', 'agent', 'id']
const TOKEN_RULE = 'must be 16–4096 printable ASCII characters without spaces'

function hex(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0')
  return out
}

interface ValidToken {
  readonly token: string
  readonly roles: readonly Role[]
  readonly agent?: ScopeKey
  readonly id?: string
}

function validToken(entry: unknown, at: string, fail: (message: string) => never): ValidToken {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) fail(`${at} must be an object { token, roles, agent?, id? }`)
  const fields = entry as Record<string, unknown>
  const unknown = Object.keys(fields).find((key) => !TOKEN_FIELDS.includes(key))
  if (unknown !== undefined) fail(`${at} has an unknown field ${JSON.stringify(unknown)} (expected token, roles, agent, id)`)
  // The token itself is never echoed: a message may end up in a log.
  if (typeof fields.token !== 'string' || !TOKEN_PATTERN.test(fields.token)) fail(`${at}.token ${TOKEN_RULE}`)
  const roles = fields.roles
  if (!Array.isArray(roles) || roles.length === 0) fail(`${at}.roles must be a non-empty array of ${ROLES.map((r) => `'${r}'`).join(', ')}`)
  for (const role of roles as unknown[]) {
    if (!ROLES.includes(role as Role)) fail(`${at}.roles has an unknown role ${JSON.stringify(String(role))} (known: ${ROLES.join(', ')})`)
  }
  const agent = fields.agent
  if (agent !== undefined) {
    if (typeof agent !== 'string' || agent === '' || agent.length > 256) fail(`${at}.agent must be a non-empty string of at most 256 characters`)
    if (!roles.includes('run') || roles.includes('admin')) fail(`${at}.agent pins a run token to one agent: it needs the run role and cannot be given with admin`)
  }
  const id = fields.id
  if (id !== undefined && (typeof id !== 'string' || !PRINCIPAL_ID.test(id) || id.startsWith('tok-'))) {
    fail(`${at}.id must be 1–64 characters of A-Z, a-z, 0-9, _ and -, not starting with "tok-"`)
  }
  return { token: fields.token, roles: [...new Set(roles as Role[])], ...(agent === undefined ? {} : { agent: agent as string }), ...(id === undefined ? {} : { id: id as string }) }
}

/** Checks `tokens` entry by entry (duplicates named by index, never by value). */
function validTokens(tokens: unknown, fail: (message: string) => never): ValidToken[] {
  if (!Array.isArray(tokens) || tokens.length === 0 || tokens.length > MAX_TOKENS) fail(`tokens must be a non-empty array of at most ${MAX_TOKENS} entries`)
  const out: ValidToken[] = []
  for (const [index, entry] of (tokens as unknown[]).entries()) {
    const valid = validToken(entry, `tokens[${index}]`, fail)
    const sameToken = out.findIndex((other) => other.token === valid.token)
    if (sameToken !== -1) fail(`tokens[${index}].token is the same as tokens[${sameToken}].token: each token names one principal`)
    const sameId = valid.id === undefined ? -1 : out.findIndex((other) => other.id === valid.id)
    if (sameId !== -1) fail(`tokens[${index}].id ${JSON.stringify(valid.id)} is already the id of tokens[${sameId}]`)
    out.push(valid)
  }
  return out
}

/** The set of `tokens`, each hashed once (now, so the first request does not pay for it). */
function principalSet(tokens: readonly ValidToken[]): PrincipalSet {
  const entries = tokens.map((entry) => {
    const resolved = sha256(entry.token).then((digest) => ({
      digest,
      principal: Object.freeze({
        id: entry.id ?? `tok-${hex(digest).slice(0, 16)}`,
        roles: Object.freeze([...entry.roles]),
        ...(entry.agent === undefined ? {} : { agent: entry.agent }),
      }) as Principal,
    }))
    // A failure (no Web Crypto) surfaces on the first request, as a 500; until then nobody awaits it.
    resolved.catch(() => undefined)
    return resolved
  })
  return {
    async identify(presented) {
      const [got, ...known] = await Promise.all([sha256(presented), ...entries])
      let found: Principal | undefined
      // Every digest is compared, whichever matches: the time does not say which token (or none) it was.
      for (const entry of known) if (digestsEqual(entry.digest, got) && found === undefined) found = entry.principal
      return found
    },
  }
}

/**
 * Validates {@link AuthOptions}: a token (or tokens), an explicit `auth: false`, or
 * `notConfigured` is required, so no server is ever open by omission. `fail` throws the
 * caller's `INVALID_OPTIONS` error (its message names the factory). The HTTP API and the
 * MCP endpoint both call it: one set of rules and messages.
 */
export function resolveAuthOptions(options: AuthOptions, fail: (message: string) => never): ResolvedAuth {
  const notConfigured =
    options.notConfigured === undefined || options.notConfigured === false
      ? undefined
      : options.notConfigured === true
        ? 'this server is not configured (no API token was provided)'
        : typeof options.notConfigured === 'string' && options.notConfigured !== ''
          ? options.notConfigured
          : fail('notConfigured must be a boolean or a non-empty string')
  if (options.auth !== undefined && options.auth !== false) fail('auth accepts only false')
  if (options.token !== undefined && options.tokens !== undefined) fail('give either token (one admin token) or tokens, not both')
  if (options.auth === false && options.token !== undefined) fail('give either token or auth: false, not both')
  if (options.auth === false && options.tokens !== undefined) fail('give either tokens or auth: false, not both')
  const hint = options.unauthorizedHint
  if (hint !== undefined && (typeof hint !== 'string' || hint === '' || hint.length > 500)) fail('unauthorizedHint must be a non-empty string of at most 500 characters')
  let tokens: ValidToken[] | undefined
  if (options.token !== undefined) {
    if (typeof options.token !== 'string' || !TOKEN_PATTERN.test(options.token)) fail(`token ${TOKEN_RULE}`)
    tokens = [{ token: options.token, roles: ['admin'], id: 'admin' }]
  } else if (options.tokens !== undefined) {
    tokens = validTokens(options.tokens, fail)
  } else if (options.auth !== false && notConfigured === undefined) {
    fail('a token is required (or pass auth: false explicitly to disable authentication)')
  }
  return { notConfigured, principals: options.auth === false ? undefined : principalSet(tokens ?? []), unauthorizedHint: hint }
}

/** Whether `principal` holds `role` (`admin` holds every role). */
export function hasRole(principal: Principal, role: Role): boolean {
  return principal.roles.includes(role) || principal.roles.includes('admin')
}
