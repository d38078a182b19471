/**
 * The wire protocol between a host and the sandbox that runs a Code Mode program, as tagged
 * messages over a private message channel.
 * @module
 */
import type { CodeLogLevel } from './contract.js'

/** The file name program frames carry in stack traces (`at f (program.ts:3:7)`). */
export const PROGRAM_SOURCE_URL = 'program.ts'

/**
 * The smallest message endpoint both sides need: a `MessagePort`, a `Worker` or a
 * worker's global scope fits it directly or through a three-line adapter.
 */
export interface WireEndpoint {
  /** Sends one message (structured clone). May throw `DataCloneError`. */
  postMessage(message: unknown): void
  /** Adds a message listener. */
  addEventListener(type: 'message', listener: WireListener): void
  /** Removes a message listener added with {@link WireEndpoint.addEventListener}. */
  removeEventListener(type: 'message', listener: WireListener): void
  /** Starts delivery where the platform needs it (web `MessagePort`). */
  start?(): void
}

/** One inbound message as a listener receives it. */
export interface WireMessageEvent {
  /** The message. */
  readonly data: unknown
  /**
   * Set by an endpoint that has already measured and checked a `call` message's arguments (a JSON
   * endpoint, whose sandbox counted their values off the host's thread): what they weigh against
   * the run's argument budget, in bytes.
   */
  readonly checkedArgBytes?: number
}

/** A message listener: receives the event whose `data` is the message. */
export type WireListener = (event: WireMessageEvent) => void

/** One binding namespace as the sandbox learns it: the global's name and its function names. */
export interface WireNamespace {
  readonly global: string
  readonly names: readonly string[]
  /** Its functions send every argument, as an array (`CodeBindingNamespace.variadic`). */
  readonly variadic?: true
}

/** Host → sandbox: run this program (sent once). */
export interface WireStartMessage {
  readonly type: 'start'
  /** The type-stripped program, compiled on its own as an AsyncFunction body. */
  readonly program: string
  readonly namespaces: readonly WireNamespace[]
  /** A courtesy hint: the sandbox stops sending console lines past it (the host enforces it anyway). */
  readonly maxLogBytes: number
  /**
   * A courtesy hint: a completion value measured larger than this is sent as its text
   * rendering (`rendered` + `oversized`) instead of whole (the host caps it anyway).
   */
  readonly maxValueBytes: number
}

/** Host → sandbox: a binding call resolved. */
export interface WireReplyOk {
  readonly type: 'reply'
  readonly id: number
  readonly ok: true
  readonly value: unknown
}

/** Host → sandbox: a binding call rejected; `toolName` makes the program see a `ToolCallError`. */
export interface WireReplyError {
  readonly type: 'reply'
  readonly id: number
  readonly ok: false
  readonly message: string
  readonly toolName?: string
  /** The failure's stable code, the program's `ToolCallError.code`. */
  readonly code?: string
}

/** Every message the host sends. */
export type HostMessage = WireStartMessage | WireReplyOk | WireReplyError

/** Sandbox → host: the bootstrap is loaded and waiting for `start` (informational). */
export interface WireReadyMessage {
  readonly type: 'ready'
}

/** Sandbox → host: one console line. */
export interface WireLogMessage {
  readonly type: 'log'
  readonly source: 'console'
  readonly level: CodeLogLevel
  readonly text: string
}

/** Sandbox → host: call binding `global.name` with `args`; `id` increases strictly within a run. */
export interface WireCallMessage {
  readonly type: 'call'
  readonly id: number
  readonly global: string
  readonly name: string
  readonly args: unknown
}

/** An error as data (never a live object) crossing the wire. */
export interface WireErrorData {
  readonly name: string
  readonly message: string
  readonly stack?: string
}

/** Sandbox → host: the program finished. */
export type WireDoneMessage =
  | { readonly type: 'done'; readonly value?: unknown; readonly rendered?: true; readonly oversized?: true }
  | { readonly type: 'done'; readonly error: WireErrorData }

/** Every message the sandbox may send. */
export type WorkerMessage = WireReadyMessage | WireLogMessage | WireCallMessage | WireDoneMessage

/** The outcome of validating one inbound message. */
export type ParsedWorkerMessage =
  | { readonly ok: true; readonly message: WorkerMessage }
  | { readonly ok: false; readonly reason: string }

/** Longest accepted error name / message / stack text; longer ones are cut host-side. */
export const MAX_ERROR_TEXT = 16_384

const levels: ReadonlySet<string> = new Set(['log', 'info', 'warn', 'error', 'debug'])

function plainObject(data: unknown): data is Record<string, unknown> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return false
  const proto: unknown = Object.getPrototypeOf(data)
  return proto === Object.prototype || proto === null
}

function exactKeys(data: Record<string, unknown>, required: readonly string[], optional: readonly string[] = []): boolean {
  const keys = Reflect.ownKeys(data)
  if (keys.length < required.length || keys.length > required.length + optional.length) return false
  let found = 0
  for (const key of keys) {
    if (typeof key !== 'string') return false
    if (required.includes(key)) found++
    else if (!optional.includes(key)) return false
    const desc = Object.getOwnPropertyDescriptor(data, key)
    if (desc === undefined || !('value' in desc)) return false
  }
  return found === required.length
}

function own(data: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(data, key) ? Object.getOwnPropertyDescriptor(data, key)?.value : undefined
}

const reject = (reason: string): ParsedWorkerMessage => ({ ok: false, reason })

/**
 * A `call` message: exactly `type`, `id`, `global`, `name` and `args`, each a data property (an
 * accessor is never run). The checks of {@link exactKeys} and the reads of `own`, with each
 * property's descriptor read once instead of twice: one of these is validated per sub-call.
 */
function parseCall(data: Record<string, unknown>): ParsedWorkerMessage {
  const keys = Reflect.ownKeys(data)
  if (keys.length !== 5) return reject('malformed call')
  let id: unknown
  let global: unknown
  let name: unknown
  let args: unknown
  // Own keys are distinct: five of the five names below means each is there once.
  for (const key of keys) {
    if (typeof key !== 'string') return reject('malformed call')
    const desc = Object.getOwnPropertyDescriptor(data, key)
    if (desc === undefined || !('value' in desc)) return reject('malformed call')
    switch (key) {
      case 'type':
        break
      case 'id':
        id = desc.value
        break
      case 'global':
        global = desc.value
        break
      case 'name':
        name = desc.value
        break
      case 'args':
        args = desc.value
        break
      default:
        return reject('malformed call')
    }
  }
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) return reject('call id must be a positive safe integer')
  if (typeof global !== 'string' || typeof name !== 'string') return reject('call global and name must be strings')
  return { ok: true, message: { type: 'call', id, global, name, args } }
}

/** Validates one message received from the sandbox. */
export function parseWorkerMessage(data: unknown): ParsedWorkerMessage {
  if (!plainObject(data)) return reject('not a plain object')
  const type = own(data, 'type')
  switch (type) {
    case 'ready':
      return exactKeys(data, ['type']) ? { ok: true, message: { type } } : reject('malformed ready')
    case 'log': {
      if (!exactKeys(data, ['type', 'source', 'level', 'text'])) return reject('malformed log')
      const source = own(data, 'source')
      const level = own(data, 'level')
      const text = own(data, 'text')
      if (source !== 'console') return reject('log source must be console')
      if (typeof level !== 'string' || !levels.has(level)) return reject('unknown log level')
      if (typeof text !== 'string') return reject('log text must be a string')
      return { ok: true, message: { type, source, level: level as CodeLogLevel, text } }
    }
    case 'call':
      return parseCall(data)
    case 'done': {
      if (Object.prototype.hasOwnProperty.call(data, 'error')) {
        if (!exactKeys(data, ['type', 'error'])) return reject('malformed done')
        const error = own(data, 'error')
        if (!plainObject(error) || !exactKeys(error, ['name', 'message'], ['stack'])) return reject('malformed done error')
        const name = own(error, 'name')
        const message = own(error, 'message')
        const stack = own(error, 'stack')
        if (typeof name !== 'string' || typeof message !== 'string') return reject('error name and message must be strings')
        if (stack !== undefined && typeof stack !== 'string') return reject('error stack must be a string')
        const cut = (s: string) => (s.length > MAX_ERROR_TEXT ? `${s.slice(0, MAX_ERROR_TEXT)}…` : s)
        return {
          ok: true,
          message: { type, error: { name: cut(name), message: cut(message), ...(stack === undefined ? {} : { stack: cut(stack) }) } },
        }
      }
      if (!exactKeys(data, ['type'], ['value', 'rendered', 'oversized'])) return reject('malformed done')
      const rendered = own(data, 'rendered')
      const oversized = own(data, 'oversized')
      if (rendered !== undefined && rendered !== true) return reject('done rendered must be true')
      if (oversized !== undefined && (oversized !== true || rendered !== true)) return reject('done oversized must be true and come with rendered')
      const value = own(data, 'value')
      if (rendered === true && typeof value !== 'string') return reject('a rendered value must be a string')
      return {
        ok: true,
        message: {
          type,
          ...(value === undefined ? {} : { value }),
          ...(rendered === true ? { rendered: true as const } : {}),
          ...(oversized === true ? { oversized: true as const } : {}),
        },
      }
    }
    default:
      return reject('unknown message type')
  }
}

/** Globals a binding namespace may not take: the program needs them. */
export const RESERVED_GLOBALS: ReadonlySet<string> = new Set([
  'console',
  'ToolCallError',
  'globalThis',
  'self',
  'window',
  'global',
  'process',
  'Promise',
  'Object',
  'Function',
  'undefined',
  'NaN',
  'Infinity',
  'eval',
  'arguments',
])

const identifierPattern = /^[A-Za-z_$][\w$]*$/
const reservedWords = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally for function if ' +
    'import in instanceof new null return super switch this throw true try typeof var void while with yield let static ' +
    'implements interface package private protected public await async'
  ).split(' '),
)

/** Why `name` cannot be a binding global, or `undefined` when it can. */
export function invalidGlobalName(name: unknown): string | undefined {
  if (typeof name !== 'string' || !identifierPattern.test(name)) return `binding global ${JSON.stringify(name)} is not a JavaScript identifier`
  if (reservedWords.has(name)) return `binding global "${name}" is a reserved word`
  if (RESERVED_GLOBALS.has(name)) return `binding global "${name}" is reserved by the runtime`
  return undefined
}
