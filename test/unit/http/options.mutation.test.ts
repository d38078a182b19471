/**
 * The HTTP app's option checks and the bearer-token primitives, each refusal with the
 * exact message an integrator reads.
 */
import { describe, expect, it } from 'vitest'
import { createToolsApp } from '../../../src/http/index.js'
import { bearerToken, digestsEqual, resolveAuthOptions, timingSafeEqualText } from '../../../src/http/auth.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { TOKEN } from './fixtures.js'
import { refusalMessage } from '../../support/refusal.js'

const runtime = createToolRuntime()

/** The message of the INVALID_OPTIONS error `fn` throws. */
function refusal(fn: () => unknown): string | undefined {
  return refusalMessage('INVALID_OPTIONS', () => fn())
}

const app = (options: unknown, r: unknown = runtime) => refusal(() => createToolsApp(r as never, options as never))

describe('createToolsApp: what it refuses, and why', () => {
  it('a runtime that is not a ToolRuntime', () => {
    for (const r of [null, 'runtime', {}, { execute: 'no' }]) expect(app({ token: TOKEN }, r)).toBe('createToolsApp: runtime must be a ToolRuntime')
  })

  it('options that are not an object', () => {
    expect(app(null)).toBe('createToolsApp: options must be an object')
    expect(app('token')).toBe('createToolsApp: options must be an object')
  })

  it('CORS origins that are not exact origins', () => {
    expect(app({ token: TOKEN, cors: {} })).toBe('createToolsApp: cors.origins must be a non-empty array')
    expect(app({ token: TOKEN, cors: { origins: 'https://a.example' } })).toBe('createToolsApp: cors.origins must be a non-empty array')
    expect(app({ token: TOKEN, cors: { origins: [] } })).toBe('createToolsApp: cors.origins must be a non-empty array')
    for (const origin of ['*', 'https://a.example/', 'https://a.example/path', 'null', 'not a url', 'HTTPS://A.EXAMPLE', 42]) {
      expect(app({ token: TOKEN, cors: { origins: ['https://ok.example', origin] } })).toBe(
        `createToolsApp: cors.origins entry ${JSON.stringify(String(origin))} is not an exact origin (scheme://host[:port])`,
      )
    }
    expect(app({ token: TOKEN, cors: { origins: ['https://a.example', 'http://localhost:8080'] } })).toBeUndefined()
  })

  it('a CORS max age that is not a non-negative integer', () => {
    for (const maxAgeSeconds of [-1, 1.5, Number.NaN, '60']) {
      expect(app({ token: TOKEN, cors: { origins: ['https://a.example'], maxAgeSeconds } })).toBe('createToolsApp: cors.maxAgeSeconds must be a non-negative integer')
    }
    expect(app({ token: TOKEN, cors: { origins: ['https://a.example'], maxAgeSeconds: 0 } })).toBeUndefined()
  })

  it('a session log that is not a hub', () => {
    for (const sessionLog of [null, 'hub', {}, { subscribe: true }]) expect(app({ token: TOKEN, sessionLog })).toBe('createToolsApp: sessionLog must be a hub from createSessionLogHub()')
  })

  it('a signal that is not an AbortSignal', () => {
    expect(app({ token: TOKEN, signal: { aborted: false } })).toBe('createToolsApp: signal must be an AbortSignal')
    expect(app({ token: TOKEN, signal: new AbortController().signal })).toBeUndefined()
  })

  it('a heartbeat that is not a non-negative finite number', () => {
    for (const heartbeatMs of [-1, Number.POSITIVE_INFINITY, Number.NaN, '100']) expect(app({ token: TOKEN, heartbeatMs })).toBe('createToolsApp: heartbeatMs must be a non-negative number')
    expect(app({ token: TOKEN, heartbeatMs: 0 })).toBeUndefined()
    expect(app({ token: TOKEN, heartbeatMs: 0.5 })).toBeUndefined()
  })

  it('an error reporter that is not a function', () => {
    expect(app({ token: TOKEN, onError: {} })).toBe('createToolsApp: onError must be a function')
  })

  it('approvals that are not a broker', () => {
    const fn = () => undefined
    for (const approvals of [null, 'broker', fn, {}, { pending: fn, decide: fn }, { pending: fn, subscribe: fn }, { decide: fn, subscribe: fn }, { pending: fn, decide: fn, subscribe: true }]) {
      expect(app({ token: TOKEN, approvals })).toBe('createToolsApp: approvals must be a broker from createApprovalBroker()')
    }
    expect(app({ token: TOKEN, approvals: { pending: () => [], decide: fn, subscribe: () => fn } })).toBeUndefined()
  })

  it('a body cap that is not a positive integer', () => {
    for (const maxBodyBytes of [0, -5, 2.5, '1024', Number.MAX_SAFE_INTEGER + 1]) expect(app({ token: TOKEN, maxBodyBytes })).toBe('createToolsApp: maxBodyBytes must be a positive integer')
    expect(app({ token: TOKEN, maxBodyBytes: 1 })).toBeUndefined()
  })
})

describe('resolveAuthOptions', () => {
  const fail = (message: string): never => {
    throw new Error(message)
  }
  const auth = (options: object) => {
    try {
      return resolveAuthOptions(options, fail)
    } catch (error) {
      return (error as Error).message
    }
  }

  it('needs a token, auth: false or notConfigured', () => {
    expect(auth({})).toBe('a token is required (or pass auth: false explicitly to disable authentication)')
    expect(auth({ notConfigured: false })).toBe('a token is required (or pass auth: false explicitly to disable authentication)')
    expect(auth({ auth: false })).toEqual({ notConfigured: undefined })
    expect(auth({ token: TOKEN })).toEqual({ notConfigured: undefined })
  })

  it('turns notConfigured into the 503 message', () => {
    expect(auth({ notConfigured: true })).toEqual({ notConfigured: 'this server is not configured (no API token was provided)' })
    expect(auth({ notConfigured: 'set TOOLYARD_TOKEN' })).toEqual({ notConfigured: 'set TOOLYARD_TOKEN' })
    for (const notConfigured of ['', 0, 1, {}]) expect(auth({ notConfigured })).toBe('notConfigured must be a boolean or a non-empty string')
  })

  it('refuses auth values other than false, and token together with auth: false', () => {
    for (const value of [true, 'off', 0]) expect(auth({ token: TOKEN, auth: value })).toBe('auth accepts only false')
    expect(auth({ token: TOKEN, auth: false })).toBe('give either token or auth: false, not both')
  })

  it('takes 16 to 4096 printable ASCII characters as a token', () => {
    const bad = 'token must be 16–4096 printable ASCII characters without spaces'
    expect(auth({ token: 'x'.repeat(16) })).toEqual({ notConfigured: undefined })
    expect(auth({ token: '!'.repeat(4096) })).toEqual({ notConfigured: undefined })
    for (const token of ['x'.repeat(15), 'x'.repeat(4097), ` ${'x'.repeat(16)}`, `${'x'.repeat(16)} `, `${'x'.repeat(8)} ${'x'.repeat(8)}`, `${'x'.repeat(16)}é`, `é${'x'.repeat(16)}`, 12345678901234567890]) {
      expect(auth({ token })).toBe(bad)
    }
  })
})

describe('bearer tokens', () => {
  it('reads the token of a Bearer header, any case, surrounding spaces allowed', () => {
    expect(bearerToken('Bearer abc')).toBe('abc')
    expect(bearerToken('  bEaReR \t abc!#  ')).toBe('abc!#')
    for (const header of [undefined, null, '', 'Bearer', 'Bearer ', 'Basic abc', 'xBearer abc', 'Bearer abc def', 'Bearerabc', 'Token Bearer abc']) {
      expect(bearerToken(header)).toBeUndefined()
    }
  })

  it('compares digests by every byte and by length', () => {
    expect(digestsEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(true)
    expect(digestsEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4]))).toBe(false)
    expect(digestsEqual(new Uint8Array([9, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(false)
    expect(digestsEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 0]))).toBe(false)
    expect(digestsEqual(new Uint8Array([1, 2, 0]), new Uint8Array([1, 2]))).toBe(false)
    expect(digestsEqual(new Uint8Array(0), new Uint8Array(0))).toBe(true)
  })

  it('timingSafeEqualText is string equality', async () => {
    expect(await timingSafeEqualText('secret-token', 'secret-token')).toBe(true)
    expect(await timingSafeEqualText('secret-token', 'secret-tokeN')).toBe(false)
    expect(await timingSafeEqualText('secret', 'secret-token')).toBe(false)
  })
})
