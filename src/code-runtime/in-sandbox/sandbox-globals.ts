/**
 * The sandbox's global environment beyond ECMAScript: the same short list on every platform
 * (QuickJS in Node threads, in browser workers and inline in workerd), and nothing else of any
 * host.
 * @module
 */

/** The VM's one generic host function: `op` names a pure service (see `engine/quickjs/engine.ts`). */
export type SandboxHostOp = (op: string, a?: unknown, b?: unknown, c?: unknown) => unknown

/** The globals this module installs, in the order the contract suite lists them. */
export const SANDBOX_GLOBAL_NAMES: readonly string[] = [
  'performance',
  'crypto',
  'URL',
  'URLSearchParams',
  'TextEncoder',
  'TextDecoder',
  'atob',
  'btoa',
  'structuredClone',
]

function namedError(name: string, message: string): Error {
  const error = new Error(message)
  Object.defineProperty(error, 'name', { value: name, configurable: true, writable: true, enumerable: false })
  return error
}

// ── UTF-8 ──────────────────────────────────────────────────────────────────────────

const utf8Labels = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8'])

function toBytes(input: unknown): Uint8Array {
  if (input === undefined) return new Uint8Array(0)
  if (input instanceof ArrayBuffer) return new Uint8Array(input)
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength)
  throw new TypeError('The "input" argument must be an ArrayBuffer or an ArrayBufferView')
}

function encodeUtf8(text: string): Uint8Array {
  const out: number[] = []
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)
        i++
      } else c = 0xfffd
    } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd
    if (c < 0x80) out.push(c)
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63))
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
  }
  return new Uint8Array(out)
}

/**
 * Decodes UTF-8 per the WHATWG decoder: each maximal invalid subpart becomes one U+FFFD (or a
 * TypeError when `fatal`).
 */
function decodeUtf8(bytes: Uint8Array, fatal: boolean, final: boolean): { text: string; pending: number } {
  let text = ''
  let chunk: number[] = []
  const flush = () => {
    if (chunk.length > 0) {
      text += String.fromCodePoint(...chunk)
      chunk = []
    }
  }
  const bad = () => {
    if (fatal) throw new TypeError('The encoded data was not valid for encoding utf-8')
    chunk.push(0xfffd)
  }
  let i = 0
  while (i < bytes.length) {
    const b = bytes[i]!
    if (b < 0x80) {
      chunk.push(b)
      i++
    } else {
      const need = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0
      if (need === 0) {
        bad()
        i++
        continue
      }
      let lower = 0x80
      let upper = 0xbf
      if (b === 0xe0) lower = 0xa0
      else if (b === 0xed) upper = 0x9f
      else if (b === 0xf0) lower = 0x90
      else if (b === 0xf4) upper = 0x8f
      let cp = b & (need === 1 ? 0x1f : need === 2 ? 0x0f : 0x07)
      let seen = 0
      let j = i + 1
      for (; seen < need && j < bytes.length; j++, seen++) {
        const next = bytes[j]!
        if (next < lower || next > upper) break
        lower = 0x80
        upper = 0xbf
        cp = (cp << 6) | (next & 0x3f)
      }
      if (seen === need) {
        chunk.push(cp)
        i = j
      } else if (j === bytes.length && !final) {
        flush()
        return { text, pending: bytes.length - i }
      } else {
        bad()
        i = j
      }
    }
    if (chunk.length >= 4096) flush()
  }
  flush()
  return { text, pending: 0 }
}

class SandboxTextEncoder {
  get encoding(): string {
    return 'utf-8'
  }

  encode(input: unknown = ''): Uint8Array {
    return encodeUtf8(String(input))
  }

  encodeInto(source: unknown, destination: Uint8Array): { read: number; written: number } {
    if (!(destination instanceof Uint8Array)) throw new TypeError('The "destination" argument must be a Uint8Array')
    const text = String(source)
    let read = 0
    let written = 0
    for (const char of text) {
      const bytes = encodeUtf8(char)
      if (written + bytes.length > destination.length) break
      destination.set(bytes, written)
      written += bytes.length
      read += char.length
    }
    return { read, written }
  }
}

class SandboxTextDecoder {
  readonly #fatal: boolean
  readonly #ignoreBOM: boolean
  #pending: Uint8Array = new Uint8Array(0)
  #bomSeen = false

  constructor(label: unknown = 'utf-8', options: { fatal?: unknown; ignoreBOM?: unknown } = {}) {
    const name = String(label).trim().toLowerCase()
    if (!utf8Labels.has(name)) throw new RangeError(`The encoding "${String(label)}" is not supported (the sandbox decodes utf-8 only)`)
    this.#fatal = Boolean(options?.fatal)
    this.#ignoreBOM = Boolean(options?.ignoreBOM)
  }

  get encoding(): string {
    return 'utf-8'
  }

  get fatal(): boolean {
    return this.#fatal
  }

  get ignoreBOM(): boolean {
    return this.#ignoreBOM
  }

  decode(input?: unknown, options: { stream?: unknown } = {}): string {
    const stream = Boolean(options?.stream)
    const fresh = toBytes(input)
    let bytes = fresh
    if (this.#pending.length > 0) {
      bytes = new Uint8Array(this.#pending.length + fresh.length)
      bytes.set(this.#pending)
      bytes.set(fresh, this.#pending.length)
    }
    const { text, pending } = decodeUtf8(bytes, this.#fatal, !stream)
    this.#pending = pending > 0 ? bytes.slice(bytes.length - pending) : new Uint8Array(0)
    let out = text
    if (!this.#ignoreBOM && !this.#bomSeen && out.length > 0) {
      this.#bomSeen = true
      if (out.charCodeAt(0) === 0xfeff) out = out.slice(1)
    }
    if (!stream) this.#bomSeen = false
    return out
  }
}

// ── base64 ─────────────────────────────────────────────────────────────────────────

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

function btoa(data: unknown): string {
  const text = String(data)
  let out = ''
  for (let i = 0; i < text.length; i += 3) {
    const a = text.charCodeAt(i)
    const b = i + 1 < text.length ? text.charCodeAt(i + 1) : 0
    const c = i + 2 < text.length ? text.charCodeAt(i + 2) : 0
    if (a > 255 || b > 255 || c > 255) throw namedError('InvalidCharacterError', 'Invalid character: btoa() takes a string of Latin-1 characters')
    const n = (a << 16) | (b << 8) | c
    out += BASE64[n >> 18]! + BASE64[(n >> 12) & 63]! + (i + 1 < text.length ? BASE64[(n >> 6) & 63]! : '=') + (i + 2 < text.length ? BASE64[n & 63]! : '=')
  }
  return out
}

function atob(data: unknown): string {
  // The forgiving-base64 decode of the HTML standard.
  let text = String(data).replace(/[\t\n\f\r ]/g, '')
  if (text.length % 4 === 0) text = text.replace(/==?$/, '')
  if (text.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(text)) throw namedError('InvalidCharacterError', 'The string to be decoded is not correctly encoded.')
  let out = ''
  let buffer = 0
  let bits = 0
  for (const char of text) {
    buffer = (buffer << 6) | BASE64.indexOf(char)
    bits += 6
    if (bits >= 8) {
      bits -= 8
      out += String.fromCharCode((buffer >> bits) & 0xff)
    }
  }
  return out
}

// ── structuredClone ────────────────────────────────────────────────────────────────

const typedArrays = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array]
const errorTypes: Record<string, ErrorConstructor> = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError }

function notCloneable(what: string): Error {
  return namedError('DataCloneError', `${what} could not be cloned.`)
}

/** The structured-clone algorithm over what a QuickJS realm holds: cycles and shared references kept. */
function structuredClone(value: unknown, options?: { transfer?: unknown }): unknown {
  if (options?.transfer !== undefined && (!Array.isArray(options.transfer) || options.transfer.length > 0)) {
    throw notCloneable('A transfer list')
  }
  const seen = new Map<object, unknown>()
  const clone = (input: unknown): unknown => {
    if (typeof input === 'function') throw notCloneable(`${input.name === '' ? 'A function' : `function ${input.name}`}`)
    if (typeof input === 'symbol') throw notCloneable(String(input))
    if (typeof input !== 'object' || input === null) return input
    const known = seen.get(input)
    if (known !== undefined) return known
    const remember = <T>(copy: T): T => {
      seen.set(input, copy)
      return copy
    }
    if (Array.isArray(input)) {
      const copy = remember(new Array<unknown>(input.length))
      for (const key of Object.keys(input)) (copy as unknown as Record<string, unknown>)[key] = clone((input as unknown as Record<string, unknown>)[key])
      return copy
    }
    if (input instanceof Date) return remember(new Date(input.getTime()))
    if (input instanceof RegExp) return remember(new RegExp(input.source, input.flags))
    if (input instanceof Boolean || input instanceof Number || input instanceof String) return remember(Object(input.valueOf()))
    if (input instanceof BigInt) return remember(Object((input as unknown as { valueOf(): bigint }).valueOf()))
    if (input instanceof ArrayBuffer) return remember(input.slice(0))
    if (input instanceof DataView) {
      const buffer = clone(input.buffer) as ArrayBuffer
      return remember(new DataView(buffer, input.byteOffset, input.byteLength))
    }
    for (const Typed of typedArrays) {
      if (input instanceof Typed) {
        const buffer = clone(input.buffer) as ArrayBuffer
        return remember(new Typed(buffer, input.byteOffset, input.length))
      }
    }
    if (input instanceof Map) {
      const copy = remember(new Map())
      for (const [k, v] of input) copy.set(clone(k), clone(v))
      return copy
    }
    if (input instanceof Set) {
      const copy = remember(new Set())
      for (const v of input) copy.add(clone(v))
      return copy
    }
    if (input instanceof Error) {
      const name = typeof input.name === 'string' && errorTypes[input.name] !== undefined ? input.name : 'Error'
      const copy = remember(new errorTypes[name]!(String(input.message)))
      if (typeof input.stack === 'string') Object.defineProperty(copy, 'stack', { value: input.stack, configurable: true, writable: true })
      return copy
    }
    if (input instanceof Promise || input instanceof WeakMap || input instanceof WeakSet || input instanceof WeakRef) {
      throw notCloneable(`#<${input.constructor.name}>`)
    }
    const copy = remember({} as Record<string, unknown>)
    for (const key of Object.keys(input)) copy[key] = clone((input as Record<string, unknown>)[key])
    return copy
  }
  return clone(value)
}

// ── URL, URLSearchParams ───────────────────────────────────────────────────────────

interface UrlParts {
  href: string
  origin: string
  protocol: string
  username: string
  password: string
  host: string
  hostname: string
  port: string
  pathname: string
  search: string
  hash: string
}

const urlKeys = ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'] as const

/** The VM's host function, set once by {@link installSandboxGlobals} (each sandbox evaluates its own copy of this script). */
let host: SandboxHostOp = () => undefined

const parseQuery = (query: string): Array<[string, string]> => JSON.parse(host('qs-parse', query) as string) as Array<[string, string]>
const serializeQuery = (pairs: ReadonlyArray<readonly [string, string]>): string => host('qs-serialize', JSON.stringify(pairs)) as string

const paramsState = new WeakMap<object, { list: Array<[string, string]>; owner: SandboxURL | undefined }>()
const stateOf = (params: object) => {
  const state = paramsState.get(params)
  if (state === undefined) throw new TypeError('Illegal invocation')
  return state
}
const urlState = new WeakMap<object, { parts: UrlParts; params: SandboxURLSearchParams | undefined }>()
const urlOf = (url: object) => {
  const state = urlState.get(url)
  if (state === undefined) throw new TypeError('Illegal invocation')
  return state
}
const parseParts = (json: unknown, input: unknown): UrlParts => {
  if (typeof json !== 'string' || json === '') throw new TypeError(`Invalid URL: ${String(input)}`)
  return JSON.parse(json) as UrlParts
}
/** A change through searchParams writes the URL's query back (the URL standard's "update steps"). */
const updateOwner = (params: object) => {
  const state = stateOf(params)
  if (state.owner === undefined) return
  const query = serializeQuery(state.list)
  const target = urlOf(state.owner)
  target.parts = parseParts(host('url-set', target.parts.href, 'search', query), query)
}

class SandboxURLSearchParams {
  constructor(init: unknown = '') {
    let list: Array<[string, string]> = []
    if (typeof init === 'object' && init !== null) {
      if (typeof (init as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function') {
        for (const pair of init as Iterable<unknown>) {
          const entry = [...(pair as Iterable<unknown>)]
          if (entry.length !== 2) throw new TypeError('Each URLSearchParams init pair must have exactly two elements')
          list.push([String(entry[0]), String(entry[1])])
        }
      } else for (const key of Object.keys(init)) list.push([key, String((init as Record<string, unknown>)[key])])
    } else {
      const text = String(init)
      list = parseQuery(text.startsWith('?') ? text.slice(1) : text)
    }
    paramsState.set(this, { list, owner: undefined })
  }

  get size(): number {
    return stateOf(this).list.length
  }

  append(name: unknown, value: unknown): void {
    stateOf(this).list.push([String(name), String(value)])
    updateOwner(this)
  }

  delete(name: unknown, value?: unknown): void {
    const state = stateOf(this)
    const n = String(name)
    state.list = state.list.filter(([k, v]) => k !== n || (value !== undefined && v !== String(value)))
    updateOwner(this)
  }

  get(name: unknown): string | null {
    const n = String(name)
    return stateOf(this).list.find(([k]) => k === n)?.[1] ?? null
  }

  getAll(name: unknown): string[] {
    const n = String(name)
    return stateOf(this).list.filter(([k]) => k === n).map(([, v]) => v)
  }

  has(name: unknown, value?: unknown): boolean {
    const n = String(name)
    return stateOf(this).list.some(([k, v]) => k === n && (value === undefined || v === String(value)))
  }

  set(name: unknown, value: unknown): void {
    const state = stateOf(this)
    const n = String(name)
    const at = state.list.findIndex(([k]) => k === n)
    if (at < 0) state.list.push([n, String(value)])
    else {
      state.list[at] = [n, String(value)]
      state.list = state.list.filter(([k], i) => k !== n || i === at)
    }
    updateOwner(this)
  }

  sort(): void {
    // Stable, by UTF-16 code units, as the standard says.
    const state = stateOf(this)
    state.list = state.list.map((pair, i) => [pair, i] as const).sort(([a, i], [b, j]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : i - j)).map(([pair]) => pair)
    updateOwner(this)
  }

  forEach(callback: (value: string, key: string, parent: SandboxURLSearchParams) => void, thisArg?: unknown): void {
    for (const [k, v] of stateOf(this).list.slice()) callback.call(thisArg, v, k, this)
  }

  *entries(): IterableIterator<[string, string]> {
    for (const [k, v] of stateOf(this).list.slice()) yield [k, v]
  }

  *keys(): IterableIterator<string> {
    for (const [k] of stateOf(this).list.slice()) yield k
  }

  *values(): IterableIterator<string> {
    for (const [, v] of stateOf(this).list.slice()) yield v
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries()
  }

  toString(): string {
    return serializeQuery(stateOf(this).list)
  }
}

class SandboxURL {
  static canParse(url: unknown, base?: unknown): boolean {
    const json = host('url-parse', String(url), base === undefined ? undefined : String(base))
    return typeof json === 'string' && json !== ''
  }

  static parse(url: unknown, base?: unknown): SandboxURL | null {
    try {
      return new SandboxURL(url, base)
    } catch {
      // URL.parse answers null for what the constructor would throw on.
      return null
    }
  }

  constructor(url: unknown, base?: unknown) {
    const input = String(url)
    const json = host('url-parse', input, base === undefined ? undefined : String(base))
    urlState.set(this, { parts: parseParts(json, input), params: undefined })
  }

  get origin(): string {
    return urlOf(this).parts.origin
  }

  get searchParams(): SandboxURLSearchParams {
    const state = urlOf(this)
    if (state.params === undefined) {
      const params = new SandboxURLSearchParams(state.parts.search)
      stateOf(params).owner = this
      state.params = params
    }
    return state.params
  }

  toString(): string {
    return urlOf(this).parts.href
  }

  toJSON(): string {
    return urlOf(this).parts.href
  }
}
for (const key of urlKeys) {
  Object.defineProperty(SandboxURL.prototype, key, {
    configurable: true,
    enumerable: true,
    get(this: SandboxURL) {
      return urlOf(this).parts[key]
    },
    set(this: SandboxURL, value: unknown) {
      const state = urlOf(this)
      const text = String(value)
      const json = host('url-set', state.parts.href, key, text)
      // Setting href to something unparseable throws; every other setter ignores bad input.
      if (key === 'href' && (typeof json !== 'string' || json === '')) throw new TypeError(`Invalid URL: ${text}`)
      state.parts = parseParts(json, text)
      if (state.params !== undefined) stateOf(state.params).list = parseQuery(state.parts.search.slice(1))
    },
  })
}
for (const Class of [SandboxURL, SandboxURLSearchParams, SandboxTextEncoder, SandboxTextDecoder]) {
  Object.defineProperty(Class, 'name', { value: Class.name.replace(/^Sandbox/, '') })
}

/** `crypto` with the host's randomness, bytes only. */
function createCrypto(): object {
  /** `n` bytes of the host's CSPRNG (they cross as hex). */
  const randomBytes = (n: number): Uint8Array => {
    const hex = host('random', n) as string
    if (typeof hex !== 'string' || hex.length !== n * 2) throw new Error('the host gave no randomness')
    const bytes = new Uint8Array(n)
    for (let i = 0; i < n; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16)
    return bytes
  }
  const crypto = Object.create(null) as Record<string, unknown>
  Object.defineProperty(crypto, 'getRandomValues', {
    enumerable: true,
    value: <T extends ArrayBufferView>(array: T): T => {
      const integer = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]
      if (!integer.some((Typed) => array instanceof Typed)) throw namedError('TypeMismatchError', 'crypto.getRandomValues needs an integer typed array')
      if (array.byteLength > 65_536) throw namedError('QuotaExceededError', `crypto.getRandomValues: ${array.byteLength} bytes requested, at most 65536 allowed`)
      const bytes = randomBytes(array.byteLength)
      const view = new Uint8Array(array.buffer, array.byteOffset, array.byteLength)
      view.set(bytes)
      return array
    },
  })
  Object.defineProperty(crypto, 'randomUUID', {
    enumerable: true,
    value: (): string => {
      const bytes = randomBytes(16)
      let hex = ''
      for (let i = 0; i < 16; i++) {
        let b = bytes[i]!
        if (i === 6) b = (b & 0x0f) | 0x40
        if (i === 8) b = (b & 0x3f) | 0x80
        hex += (b < 16 ? '0' : '') + b.toString(16)
      }
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
    },
  })
  Object.freeze(crypto)
  return crypto
}

/** `performance.now()` on the host clock. */
function createPerformance(): object {
  const performance = Object.create(null) as Record<string, unknown>
  Object.defineProperty(performance, 'now', { enumerable: true, value: (): number => host('now') as number })
  Object.freeze(performance)
  return performance
}

/**
 * `Date` whose current time (`Date.now()`, `new Date()`, `Date()`) comes from the host's `date`
 * service, and `Math.random` from its `rand` service.
 */
function installJournaledClock(): void {
  const NativeDate = Date
  const construct = Reflect.construct
  const now = (): number => host('date') as number
  function SandboxDate(this: unknown, ...args: unknown[]): unknown {
    if (new.target === undefined) return new NativeDate(now()).toString()
    return construct(NativeDate, args.length === 0 ? [now()] : args, new.target)
  }
  Object.defineProperty(SandboxDate, 'name', { value: 'Date' })
  Object.defineProperty(SandboxDate, 'length', { value: 7 })
  Object.defineProperty(SandboxDate, 'prototype', { value: NativeDate.prototype, writable: false })
  Object.defineProperty(SandboxDate, 'now', { value: now, writable: true, configurable: true })
  Object.defineProperty(SandboxDate, 'parse', { value: NativeDate.parse, writable: true, configurable: true })
  Object.defineProperty(SandboxDate, 'UTC', { value: NativeDate.UTC, writable: true, configurable: true })
  Object.defineProperty(NativeDate.prototype, 'constructor', { value: SandboxDate, writable: true, configurable: true })
  Object.defineProperty(globalThis, 'Date', { value: SandboxDate, writable: true, configurable: true, enumerable: false })
  Object.defineProperty(Math, 'random', { value: (): number => host('rand') as number, writable: true, configurable: true })
}

/** Installs the environment on `globalThis`. Called once, before any program exists. */
export function installSandboxGlobals(hostOp: SandboxHostOp): void {
  host = hostOp
  installJournaledClock()
  const define = (name: string, value: unknown) => Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false })
  define('performance', createPerformance())
  define('crypto', createCrypto())
  define('URL', SandboxURL)
  define('URLSearchParams', SandboxURLSearchParams)
  define('TextEncoder', SandboxTextEncoder)
  define('TextDecoder', SandboxTextDecoder)
  define('atob', atob)
  define('btoa', btoa)
  define('structuredClone', structuredClone)
}
