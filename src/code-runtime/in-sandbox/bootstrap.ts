/**
 * The in-sandbox side of the wire protocol, platform-neutral: each platform's worker entry obtains
 * a private endpoint (a `MessagePort` handed over before any program code exists) and calls {@link
 * startBootstrap} with it.
 * @module
 */
import type { CodeLogLevel } from '../contract.js'
import { ToolCallError } from '../../errors.js'
import { closestNames } from '../closest-names.js'
import { deepValueText, MAX_VALUE_DEPTH, measureValueBytes, renderedWithin, renderValue, utf8Length } from '../render.js'
import { nestsDeeperThan } from '../../json/nesting.js'
import { MAX_ERROR_TEXT, PROGRAM_SOURCE_URL } from '../wire.js'
import type { WireEndpoint, WireErrorData, WireNamespace } from '../wire.js'

/** What a platform may add to the bootstrap. */
export interface BootstrapOptions {
  /**
   * Awaited (bounded) before `done` is posted, so output the platform routes through
   * its own channel (Node's captured stdout/stderr) reaches the host first.
   */
  readonly flush?: () => Promise<void>
  /**
   * Makes the sender of one binding's calls, for an endpoint that serializes calls itself (the
   * QuickJS sandbox's JSON text): `send(id, args)` posts the call, or throws (with the reason) when
   * the arguments cannot cross. It must refuse arguments nesting deeper than `MAX_VALUE_DEPTH`
   * without recursing past that depth ({@link callArgsJson}): the in-VM depth walk then runs only
   * for a call that could not be sent, to name the depth as the reason.
   */
  readonly callSender?: (global: string, name: string) => (id: number, args: unknown) => void
}

/** Handle the platform's worker entry keeps to report failures the program's promise chain cannot see. */
export interface BootstrapHandle {
  /** Ends the run with this error (an uncaught exception from a timer callback, say). First outcome wins. */
  reportUncaught(error: unknown): void
}

interface Pending {
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

/** The AsyncFunction constructor prepends two lines (`async function anonymous(\n) {\n`) to the body. */
const BODY_LINE_OFFSET = 2
const FLUSH_LIMIT_MS = 250

/** Formats console arguments like `util.format`: `%s %d %i %f %o %O %j %%` in a leading string, then the rest space-joined. */
function formatArgs(args: readonly unknown[], maxLength: number): string {
  const render = (value: unknown, top: boolean) =>
    renderValue(value, { maxLength, rawTopLevelString: top, maxDepth: top ? 6 : 4 })
  const first = args[0]
  let rest = 0
  let head = ''
  if (typeof first === 'string' && first.includes('%') && args.length > 1) {
    rest = 1
    head = first.replace(/%([sdifoOjc%])/g, (all, spec: string) => {
      if (spec === '%') return '%'
      if (rest >= args.length) return all
      const arg = args[rest++]
      switch (spec) {
        case 's':
          return typeof arg === 'string' ? arg : render(arg, false)
        case 'd':
        case 'i': {
          if (typeof arg === 'bigint') return `${String(arg)}n`
          const n = typeof arg === 'number' ? arg : typeof arg === 'string' ? Number(arg) : Number.NaN
          return String(spec === 'i' ? Math.trunc(n) : n)
        }
        case 'f':
          return String(typeof arg === 'number' ? arg : typeof arg === 'string' ? Number.parseFloat(arg) : Number.NaN)
        case 'c':
          return ''
        default:
          return render(arg, false)
      }
    })
  } else if (args.length > 0) {
    rest = 1
    head = render(first, true)
  }
  let out = head
  for (let i = rest; i < args.length && out.length < maxLength; i++) out += ` ${render(args[i], true)}`
  return out
}

function readString(value: object, key: string): string | undefined {
  try {
    const v = (value as Record<string, unknown>)[key]
    return typeof v === 'string' ? v : undefined
  } catch {
    // A throwing getter or proxy trap: the property reads as absent.
    return undefined
  }
}

/** Rewrites `program.ts:L:C` frames from AsyncFunction body lines to the model's source lines. */
function remapStack(stack: string): string {
  const escaped = PROGRAM_SOURCE_URL.replace(/\./g, '\\.')
  return stack.replace(new RegExp(`${escaped}:(\\d+):(\\d+)`, 'g'), (_all, line: string, column: string) => {
    return `${PROGRAM_SOURCE_URL}:${Math.max(1, Number(line) - BODY_LINE_OFFSET)}:${column}`
  })
}

// Captured when the sandbox script loads, before any program exists.
const objectCreate = Object.create
const objectDefineProperty = Object.defineProperty
const objectKeys = Object.keys
const jsonStringify = JSON.stringify
const jsonParse = JSON.parse
const isFiniteNumber = Number.isFinite
const isView = ArrayBuffer.isView
const MapCtor = Map
const SetCtor = Set
const RegExpCtor = RegExp
const ArrayBufferCtor = ArrayBuffer
const ProxyCtor = Proxy
const hasOwn = Object.prototype.hasOwnProperty.call.bind(Object.prototype.hasOwnProperty) as (target: object, key: PropertyKey) => boolean

const PROBED_NAMES: ReadonlySet<string> = new Set([
  ...Object.getOwnPropertyNames(Object.prototype),
  'then', 'catch', 'finally', 'toJSON', 'prototype', 'length', 'name', 'arguments', 'caller', 'call', 'apply', 'bind',
])

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

/** `tools.name`, or `tools["my name"]` when the name is not an identifier. */
function memberText(global: string, name: string): string {
  const shown = name.length > 80 ? `${name.slice(0, 80)}…` : name
  return IDENTIFIER.test(shown) ? `${global}.${shown}` : `${global}[${jsonStringify(shown)}]`
}

/**
 * The error for calling a name a namespace does not have, naming the closest names it does have:
 * `tools.list_file is not a function (tools has no "list_file"); did you mean tools.list_files?`.
 */
export function unknownBindingMessage(global: string, name: string, names: readonly string[]): string {
  const missing = memberText(global, name)
  const shownName = name.length > 80 ? `${name.slice(0, 80)}…` : name
  const head = `${missing} is not a function (${global} has no ${jsonStringify(shownName)})`
  const close = closestNames(name, names).map((candidate) => memberText(global, candidate))
  if (close.length === 0) return names.length === 0 ? `${head}; ${global} is empty` : head
  const listed = close.length === 1 ? close[0] : `${close.slice(0, -1).join(', ')} or ${close[close.length - 1]}`
  return `${head}; did you mean ${listed}?`
}

/**
 * A namespace as the program sees it: the frozen null-prototype object of bindings, behind a proxy
 * that answers only reads of names it lacks.
 */
function namespaceView(global: string, target: Record<string, unknown>, names: readonly string[]): object {
  return new ProxyCtor(target, {
    get(object, key) {
      if (typeof key !== 'string' || hasOwn(object, key) || PROBED_NAMES.has(key)) return (object as Record<PropertyKey, unknown>)[key]
      const unknown = (): never => {
        throw new TypeError(unknownBindingMessage(global, key, names))
      }
      return unknown
    },
  })
}

/**
 * A `JSON.stringify` replacer that refuses what JSON would silently change or drop (functions,
 * symbols, non-finite numbers, Maps, Sets, RegExps, binary data; BigInt already throws): a value
 * either crosses as itself, or the sender hears why not.
 */
export function strictJson(this: unknown, _key: string, value: unknown): unknown {
  const type = typeof value
  if (type === 'function' || type === 'symbol') throw new TypeError(`a ${type} is not JSON`)
  if (type === 'number' && !isFiniteNumber(value)) throw new TypeError(`${String(value)} is not JSON`)
  if (type === 'object' && value !== null) {
    if (value instanceof MapCtor || value instanceof SetCtor || value instanceof RegExpCtor || value instanceof ArrayBufferCtor || isView(value)) {
      throw new TypeError('a Map, Set, RegExp or binary value is not JSON')
    }
  }
  return value
}

/**
 * The containers `JSON.stringify` has open in {@link boundedJson}'s serialization, outermost
 * first: `[0]`…`[length - 1]`. A null-prototype record, not an array: a write past an array's end
 * consults `Array.prototype`, where a program can put a setter for that index (a getter too), and
 * the path would lose its entries, its depth would restart and a value 100,000 levels deep would
 * reach `JSON.stringify`'s recursion (inline QuickJS runs it on the host's stack).
 */
interface OpenPath {
  [index: number]: unknown
  length: number
}

const newPath = (): OpenPath => ({ __proto__: null, length: 0 }) as unknown as OpenPath

let openPath: OpenPath = newPath()

/**
 * {@link strictJson} that also refuses a value nesting deeper than `MAX_VALUE_DEPTH` as
 * `JSON.stringify` reaches it, before its recursion goes deeper: the depth check of arguments the
 * sender serializes anyway, with no walk of its own. The stringify is depth first, so a value's
 * holder is on the path of open containers (the root's holder, a fresh wrapper, is not): the
 * containers after it are closed. Own properties of a null-prototype record only: nothing a
 * program can replace or intercept.
 */
function boundedJson(this: unknown, key: string, value: unknown): unknown {
  // Called, not `.call`ed: `Function.prototype.call` is the program's to replace.
  strictJson(key, value)
  if (typeof value === 'object' && value !== null) {
    const path = openPath
    let open = path.length
    while (open > 0 && path[open - 1] !== this) open--
    if (open >= MAX_VALUE_DEPTH) throw new RangeError(`they nest deeper than ${MAX_VALUE_DEPTH} levels; flatten them`)
    path[open] = value
    path.length = open + 1
  }
  return value
}

/**
 * `JSON.stringify(args)` for a binding call, refusing what {@link strictJson} refuses and, as it
 * goes, a value nesting deeper than `MAX_VALUE_DEPTH`: QuickJS's JSON recursion then never goes
 * deeper than that (where the VM runs on the host's own stack, deeper would overflow it). A call
 * made from inside it (a getter's) serializes on a path of its own.
 */
export function callArgsJson(args: unknown): string | undefined {
  const outer = openPath
  // A fresh path per call: it holds no reference to a call's values once the call is sent.
  openPath = newPath()
  try {
    return jsonStringify(args, boundedJson) as string | undefined
  } finally {
    openPath = outer
  }
}

/** True when `args` nest deeper than `MAX_VALUE_DEPTH` (a walk, no recursion); false when even walking fails (a VM out of memory). */
function nestsTooDeep(args: unknown): boolean {
  try {
    return !holdsNoContainer(args) && nestsDeeperThan(args, MAX_VALUE_DEPTH)
  } catch {
    return false
  }
}

function depthRefusal(global: string, name: string): TypeError {
  return new TypeError(`${global}.${name}: the arguments cannot be sent to the host (they nest deeper than ${MAX_VALUE_DEPTH} levels; flatten them)`)
}

/**
 * Why a call could not be sent: a value too deep reads as such whatever stopped the send first
 * (a function before the deep part, say), as when the depth walk came first; else the send's reason.
 */
function sendRefusal(global: string, name: string, args: unknown, error: unknown): TypeError {
  if (nestsTooDeep(args)) return depthRefusal(global, name)
  const why = readString(error as object, 'message') ?? 'not structured-cloneable'
  return new TypeError(`${global}.${name}: the arguments cannot be sent to the host (${why})`)
}

/** Cuts a text to the host's limit here, so a 100 MB message is never copied to the host only to be cut there. */
function cut(text: string): string {
  return text.length > MAX_ERROR_TEXT ? `${text.slice(0, MAX_ERROR_TEXT)}…` : text
}

function isError(value: object): boolean {
  try {
    return value instanceof Error
  } catch {
    // A proxy whose getPrototypeOf trap throws (or a revoked proxy).
    return false
  }
}

function errorData(error: unknown): WireErrorData {
  try {
    if (typeof error === 'object' && error !== null) {
      const message = readString(error, 'message')
      if (message !== undefined || isError(error)) {
        const name = readString(error, 'name') ?? 'Error'
        const stack = readString(error, 'stack')
        const data = nullRecord()
        data.name = cut(name)
        data.message = cut(message ?? '')
        if (stack !== undefined) data.stack = cut(remapStack(cut(stack)))
        return data as unknown as WireErrorData
      }
    }
    return plainError(`Uncaught ${renderValue(error, { maxLength: 2_000, rawTopLevelString: false })}`)
  } catch {
    // Whatever the thrown value does when read, the run still reports an exception.
    return plainError('Uncaught exception (the thrown value could not be read)')
  }
}

function plainError(message: string): WireErrorData {
  const data = nullRecord()
  data.name = 'Error'
  data.message = message
  return data as unknown as WireErrorData
}

function nullRecord(): Record<string, unknown> {
  return objectCreate(null) as Record<string, unknown>
}

function envelope(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out = nullRecord()
  for (const key of objectKeys(fields)) out[key] = fields[key]
  return out
}

const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor

/** True when `value` is a primitive, or a container whose own data values are all primitives. */
function holdsNoContainer(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true
  try {
    // The walk looks into these by their entries, not their keys.
    if (value instanceof MapCtor || value instanceof SetCtor) return false
    const keys = objectKeys(value)
    for (let i = 0; i < keys.length; i++) {
      const item: unknown = getOwnPropertyDescriptor(value, keys[i]!)?.value
      if (typeof item === 'object' && item !== null) return false
    }
    return true
  } catch {
    return false
  }
}

/** The console shim: every method writes through `log`. */
function createConsole(log: (level: CodeLogLevel, args: readonly unknown[]) => void): Record<string, unknown> {
  const shim = objectCreate(null) as Record<string, unknown>
  const levels: readonly CodeLogLevel[] = ['log', 'info', 'warn', 'error', 'debug']
  for (const level of levels) objectDefineProperty(shim, level, { value: (...args: unknown[]) => log(level, args), enumerable: true })
  objectDefineProperty(shim, 'trace', { value: (...args: unknown[]) => log('debug', ['Trace:', ...args]), enumerable: true })
  objectDefineProperty(shim, 'dir', { value: (value: unknown) => log('log', [value]), enumerable: true })
  objectDefineProperty(shim, 'table', { value: (value: unknown) => log('log', [value]), enumerable: true })
  objectDefineProperty(shim, 'assert', {
    value: (condition: unknown, ...args: unknown[]) => {
      if (!condition) log('error', ['Assertion failed', ...args])
    },
    enumerable: true,
  })
  for (const noop of ['group', 'groupEnd', 'groupCollapsed', 'time', 'timeEnd', 'timeLog', 'count', 'countReset', 'clear']) {
    objectDefineProperty(shim, noop, { value: () => undefined, enumerable: true })
  }
  return shim
}

/**
 * Starts the bootstrap on a private endpoint: posts `ready`, waits for the host's `start`, runs the
 * program once and posts `done`.
 */
export function startBootstrap(endpoint: WireEndpoint, options: BootstrapOptions = {}): BootstrapHandle {
  // Captured before the program can replace them.
  const post = endpoint.postMessage.bind(endpoint)
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as new (body: string) => () => Promise<unknown>
  const defineProperty = Object.defineProperty
  const createNull = () => Object.create(null) as Record<string, unknown>
  const PromiseCtor = Promise
  // The bootstrap's own promise plumbing calls the captured `then`: a program replacing
  // `Promise.prototype.then` (or `.constructor`) cannot swallow the run's outcome.
  const promiseThen = Promise.prototype.then
  const apply = Reflect.apply
  const thenOf = (promise: Promise<unknown>, onValue: (value: unknown) => void, onError: (error: unknown) => void): void => {
    apply(promiseThen, promise, [onValue, onError])
  }
  const setTimer = globalThis.setTimeout.bind(globalThis)
  const flush = options.flush
  const pending = new Map<number, Pending>()
  const pendingGet = Map.prototype.get.bind(pending) as (id: number) => Pending | undefined
  const pendingSet = Map.prototype.set.bind(pending) as (id: number, p: Pending) => void
  const pendingDelete = Map.prototype.delete.bind(pending) as (id: number) => boolean
  let started = false
  let finished = false
  let nextId = 1
  let logBytes = 0
  let logLimit = Number.POSITIVE_INFINITY
  let valueLimit = Number.POSITIVE_INFINITY

  const finish = (outcome: { readonly value?: unknown } | { readonly error: unknown }): void => {
    if (finished) return
    finished = true
    const report = () => {
      if ('error' in outcome) {
        post(envelope({ type: 'done', error: errorData(outcome.error) }))
        return
      }
      const value = outcome.value
      if (value === undefined) {
        post(envelope({ type: 'done' }))
        return
      }
      // An oversized value is rendered here, within the cap, instead of being copied
      // whole to the host (500 MB of typed array, ten million elements) only to be cut there.
      if (measureValueBytes(value, valueLimit) > valueLimit) {
        post(envelope({ type: 'done', value: renderedWithin(value, valueLimit), rendered: true, oversized: true }))
        return
      }
      // Deep nesting would overflow the host's recursion (its message deserializer first).
      if (nestsDeeperThan(value, MAX_VALUE_DEPTH)) {
        post(envelope({ type: 'done', value: deepValueText(value, valueLimit) }))
        return
      }
      // The result goes back to a model as JSON on every runtime: a value JSON cannot
      // carry fails the run, naming why, instead of arriving as something else.
      let json: string | undefined
      try {
        json = jsonStringify(value, strictJson) as string | undefined
      } catch (error) {
        const why = readString(error as object, 'message') ?? 'it is not JSON'
        finishError(`the program's return value cannot be sent back as JSON (${why}); return plain data: objects, arrays, strings, finite numbers, booleans, null`)
        return
      }
      post(envelope(json === undefined ? { type: 'done' } : { type: 'done', value: jsonParse(json) }))
    }
    const finishError = (message: string) => {
      const data = nullRecord()
      data.name = 'TypeError'
      data.message = message
      post(envelope({ type: 'done', error: data }))
    }
    // Whatever the program did to this realm, the host hears exactly one `done`.
    const send = () => {
      try {
        report()
      } catch (error) {
        try {
          post(envelope({ type: 'done', error: plainError(`the run's outcome could not be reported (${readString(error as object, 'message') ?? 'unknown error'})`) }))
        } catch {
          // Nothing left to try: the host's wall-clock budget settles the run.
        }
      }
    }
    if (flush === undefined) send()
    else {
      const bounded = new PromiseCtor<void>((resolve) => {
        setTimer(resolve, FLUSH_LIMIT_MS)
        thenOf(flush(), () => resolve(), () => resolve())
      })
      thenOf(bounded, send, send)
    }
  }

  const log = (level: CodeLogLevel, args: readonly unknown[]): void => {
    if (finished || logBytes > logLimit) return
    const text = formatArgs(args, Math.max(1, Math.min(logLimit - logBytes + 1, 1_000_000)))
    logBytes += utf8Length(text) + 1
    try {
      post(envelope({ type: 'log', source: 'console', level, text }))
    } catch {
      // Unreachable for strings; kept so console calls never throw into the program.
    }
  }

  const makeBinding = (global: string, name: string, variadic: boolean) => {
    const send = options.callSender?.(global, name)
    // A rest parameter builds its array without the iterator protocol, so a program
    // that replaced Array.prototype[Symbol.iterator] cannot change what is sent.
    const binding = (...given: unknown[]): Promise<unknown> =>
      new PromiseCtor<unknown>((resolve, reject) => {
        const args = variadic ? given : given[0]
        // A structured clone recurses over the value: its depth is walked first (a sender bounds it as it serializes).
        if (send === undefined && nestsTooDeep(args)) {
          reject(depthRefusal(global, name))
          return
        }
        const id = nextId++
        pendingSet(id, { resolve, reject })
        try {
          if (send === undefined) post(envelope({ type: 'call', id, global, name, args }))
          else send(id, args)
        } catch (error) {
          pendingDelete(id)
          reject(sendRefusal(global, name, args, error))
        }
      })
    defineProperty(binding, 'name', { value: name })
    return binding
  }

  const installGlobals = (namespaces: readonly WireNamespace[]) => {
    for (const ns of namespaces) {
      const target = createNull()
      for (const name of ns.names) {
        defineProperty(target, name, { value: makeBinding(ns.global, name, ns.variadic === true), enumerable: true, writable: false, configurable: false })
      }
      Object.freeze(target)
      defineProperty(globalThis, ns.global, { value: namespaceView(ns.global, target, ns.names), writable: true, configurable: true, enumerable: false })
    }
    defineProperty(globalThis, 'console', { value: createConsole(log), writable: true, configurable: true, enumerable: false })
    defineProperty(globalThis, 'ToolCallError', { value: ToolCallError, writable: true, configurable: true, enumerable: false })
  }

  const run = (program: string, namespaces: readonly WireNamespace[], maxLogBytes: number, maxValueBytes: number) => {
    logLimit = maxLogBytes
    valueLimit = maxValueBytes
    let fn: () => Promise<unknown>
    try {
      installGlobals(namespaces)
      fn = new AsyncFunction(`${program}\n//# sourceURL=${PROGRAM_SOURCE_URL}`)
    } catch (error) {
      finish({ error })
      return
    }
    let result: Promise<unknown>
    try {
      result = fn()
    } catch (error) {
      finish({ error })
      return
    }
    // An AsyncFunction always returns a native promise: no thenable lookup, no species.
    thenOf(
      result,
      (value) => finish({ value }),
      (error: unknown) => finish({ error }),
    )
  }

  endpoint.addEventListener('message', (event) => {
    const data = event.data as Record<string, unknown> | null
    if (typeof data !== 'object' || data === null) return
    if (data.type === 'start' && !started) {
      started = true
      const namespaces = Array.isArray(data.namespaces) ? (data.namespaces as WireNamespace[]) : []
      const limit = typeof data.maxLogBytes === 'number' ? data.maxLogBytes : Number.POSITIVE_INFINITY
      const valueCap = typeof data.maxValueBytes === 'number' ? data.maxValueBytes : Number.POSITIVE_INFINITY
      run(typeof data.program === 'string' ? data.program : '', namespaces, limit, valueCap)
      return
    }
    if (data.type === 'reply' && typeof data.id === 'number') {
      const entry = pendingGet(data.id)
      if (entry === undefined) return
      pendingDelete(data.id)
      if (data.ok === true) entry.resolve(data.value)
      else {
        const message = typeof data.message === 'string' ? data.message : 'binding call failed'
        entry.reject(typeof data.toolName === 'string' ? new ToolCallError(data.toolName, message, typeof data.code === 'string' ? data.code : undefined) : new Error(message))
      }
    }
  })
  endpoint.start?.()
  post(envelope({ type: 'ready' }))

  return {
    reportUncaught(error: unknown) {
      if (started) finish({ error })
    },
  }
}
