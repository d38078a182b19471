/**
 * Bearer-token comparison that takes the same time whatever the inputs share.
 *
 * @module
 */

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

/** The authentication options shared by the HTTP API and the MCP endpoint. */
export interface AuthOptions {
  /** The bearer token (16–4096 printable ASCII characters, no spaces). */
  readonly token?: string
  /** `false` disables authentication; must be said explicitly (and not together with `token`). */
  readonly auth?: false
  /** Truthy → every protected route answers 503 `NOT_CONFIGURED`; a string replaces the message. */
  readonly notConfigured?: boolean | string
}

/**
 * Validates {@link AuthOptions}: a token, an explicit `auth: false`, or `notConfigured`
 * is required, so no server is ever open by omission. `fail` throws the caller's
 * `INVALID_OPTIONS` error (its message names the factory).
 */
export function resolveAuthOptions(options: AuthOptions, fail: (message: string) => never): { readonly notConfigured: string | undefined } {
  const notConfigured =
    options.notConfigured === undefined || options.notConfigured === false
      ? undefined
      : options.notConfigured === true
        ? 'this server is not configured (no API token was provided)'
        : typeof options.notConfigured === 'string' && options.notConfigured !== ''
          ? options.notConfigured
          : fail('notConfigured must be a boolean or a non-empty string')
  if (options.auth !== undefined && options.auth !== false) fail('auth accepts only false')
  if (options.auth === false && options.token !== undefined) fail('give either token or auth: false, not both')
  if (options.token !== undefined) {
    if (typeof options.token !== 'string' || !/^[\x21-\x7e]{16,4096}$/.test(options.token)) {
      fail('token must be 16–4096 printable ASCII characters without spaces')
    }
  } else if (options.auth !== false && notConfigured === undefined) {
    fail('a token is required (or pass auth: false explicitly to disable authentication)')
  }
  return { notConfigured }
}
