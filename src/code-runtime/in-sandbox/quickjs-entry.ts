/**
 * The in-VM side of the QuickJS runtime, bundled (with the shared bootstrap of
 * `src/code-runtime/in-sandbox/bootstrap.ts`) into one script by `scripts/gen-bootstrap.mjs` and
 * evaluated inside each fresh QuickJS context.
 * @module
 */
import { callArgsJson, startBootstrap, strictJson } from './bootstrap.js'
import { MAX_VM_MESSAGE_CHARS } from '../sandbox-protocol.js'
import { installSandboxGlobals } from './sandbox-globals.js'
import { guardCompilers } from './compile-guard.js'
import type { SandboxHostOp } from './sandbox-globals.js'
import type { WireEndpoint, WireListener } from '../wire.js'

/** Sends one message (JSON text) to the host. */
export type SandboxPost = (json: string) => void

/** Arms (`delay >= 0`) or clears (`delay < 0`) host timer `id`; returns false when the host refuses. */
export type SandboxTimer = (id: number, delay: number) => boolean

/** What the host keeps to drive the sandbox. */
export interface SandboxApi {
  /** Delivers one host message (JSON text) to the bootstrap's listeners. */
  deliver(json: string): void
  /** Runs the callback of timer `id` (the host timer fired). */
  fire(id: number): void
}

interface TimerEntry {
  readonly callback: (...args: unknown[]) => unknown
  readonly args: readonly unknown[]
  readonly repeat: number | undefined
}

const MAX_DELAY = 2_147_483_647

/** Installs timers and the global environment, and starts the bootstrap on an endpoint over `post`. */
export function install(post: SandboxPost, timer: SandboxTimer, host: SandboxHostOp): SandboxApi {
  // Captured before the program can replace them.
  const stringify = JSON.stringify
  const parse = JSON.parse
  const defineProperty = Object.defineProperty
  const listeners: WireListener[] = []
  const timers = new Map<number, TimerEntry>()
  const timersGet = Map.prototype.get.bind(timers) as (id: number) => TimerEntry | undefined
  const timersSet = Map.prototype.set.bind(timers) as (id: number, entry: TimerEntry) => void
  const timersDelete = Map.prototype.delete.bind(timers) as (id: number) => boolean
  let nextTimer = 1

  const endpoint: WireEndpoint = {
    postMessage(message: unknown) {
      post(stringify(message, strictJson))
    },
    addEventListener(_type: 'message', listener: WireListener) {
      listeners.push(listener)
    },
    removeEventListener(_type: 'message', listener: WireListener) {
      const at = listeners.indexOf(listener)
      if (at >= 0) listeners.splice(at, 1)
    },
  }

  const arm = (callback: unknown, delay: unknown, args: readonly unknown[], repeat: boolean): number => {
    if (typeof callback !== 'function') throw new TypeError('the timer callback must be a function (string callbacks are not supported)')
    const ms = typeof delay === 'number' && delay > 0 ? (delay > MAX_DELAY ? MAX_DELAY : delay) : 0
    const id = nextTimer++
    timersSet(id, { callback: callback as TimerEntry['callback'], args, repeat: repeat ? ms : undefined })
    if (!timer(id, ms)) {
      timersDelete(id)
      throw new RangeError('too many pending timers')
    }
    return id
  }
  const clear = (id: unknown): void => {
    if (typeof id === 'number' && timersDelete(id)) timer(id, -1)
  }
  const globals: Record<string, unknown> = {
    setTimeout: (callback: unknown, delay?: unknown, ...args: unknown[]) => arm(callback, delay, args, false),
    setInterval: (callback: unknown, delay?: unknown, ...args: unknown[]) => arm(callback, delay, args, true),
    clearTimeout: clear,
    clearInterval: clear,
    queueMicrotask: (callback: unknown) => {
      if (typeof callback !== 'function') throw new TypeError('queueMicrotask needs a function')
      void Promise.resolve().then(callback as () => void)
    },
  }
  for (const name of Object.keys(globals)) defineProperty(globalThis, name, { value: globals[name], writable: true, configurable: true, enumerable: false })
  installSandboxGlobals(host)
  guardCompilers(host)

  // The hot path (every tools.x() call): the envelope's fixed text is built once per binding, and
  // only the arguments pass through the strict replacer.
  const callSender = (global: string, name: string) => {
    const head = `,"global":${stringify(global) as string},"name":${stringify(name) as string}`
    return (id: number, args: unknown): void => {
      const text = args === undefined ? '' : `,"args":${callArgsJson(args) as string}`
      if (text.length > MAX_VM_MESSAGE_CHARS) {
        throw new RangeError(`the arguments take ${Math.ceil(text.length / 1024 / 1024)} MiB of JSON; at most ${MAX_VM_MESSAGE_CHARS / 1024 / 1024} MiB go to the host in one call`)
      }
      post(`{"type":"call","id":${id}${head}${text}}`)
    }
  }
  const handle = startBootstrap(endpoint, { callSender })

  return {
    deliver(json: string) {
      const data: unknown = parse(json)
      // One listener (the bootstrap's) is the rule: called without copying the list.
      if (listeners.length === 1) {
        const only = listeners[0]!
        only({ data })
        return
      }
      for (const listener of listeners.slice()) listener({ data })
    },
    fire(id: number) {
      const entry = timersGet(id)
      if (entry === undefined) return
      if (entry.repeat === undefined) timersDelete(id)
      else if (!timer(id, entry.repeat)) timersDelete(id)
      try {
        entry.callback(...entry.args)
      } catch (error) {
        handle.reportUncaught(error)
      }
    },
  }
}
