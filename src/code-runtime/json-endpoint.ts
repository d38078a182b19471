/**
 * The host end of a channel whose sandbox side speaks JSON text: the QuickJS VM, inline (workerd)
 * or in a sandbox thread.
 * @module
 */
import type { CodeRunFailureKind } from './contract.js'
import { adoptParsedJson } from '../json/lossless.js'
import { ARG_BYTES_PER_NODE } from './limits.js'
import { MAX_VALUE_DEPTH } from './render.js'
import { PROGRAM_SOURCE_URL } from './wire.js'
import type { WireEndpoint, WireListener, WireMessageEvent } from './wire.js'

/** The error QuickJS reports when a run's memory is exhausted. */
export function isOutOfMemory(name: unknown, message: unknown): boolean {
  return name === 'InternalError' && message === 'out of memory'
}

/** The failure message of a run that exhausted its QuickJS memory. */
export function outOfMemoryMessage(memoryMb: number): string {
  return `out of memory: the program exceeded the ${memoryMb} MB memory of its QuickJS sandbox`
}

/** Rewrites QuickJS frames of the program (`<input>:L:C`, two wrapper lines above the body) to `program.ts:L:C`. */
function remapQuickJsStack(stack: string): string {
  return stack.replace(/<input>:(\d+)(?::(\d+))?/g, (_all, line: string, column: string | undefined) => {
    const mapped = `${PROGRAM_SOURCE_URL}:${Math.max(1, Number(line) - 2)}`
    return column === undefined ? mapped : `${mapped}:${column}`
  })
}

function weighArgs(args: unknown, textLength: number): number | undefined {
  if (args === undefined) return 0
  const adopted = adoptParsedJson(args)
  if (adopted === undefined || adopted.depth > MAX_VALUE_DEPTH) return undefined
  return textLength + ARG_BYTES_PER_NODE * adopted.nodes
}

function own(data: object, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(data, key) ? (data as Record<string, unknown>)[key] : undefined
}

/** A {@link WireEndpoint} for a host session over a JSON-text sandbox. */
export class JsonWireEndpoint implements WireEndpoint {
  readonly #send: (json: string) => void
  readonly #fail: (kind: CodeRunFailureKind, message: string) => void
  readonly #memoryMb: number
  readonly #listeners: WireListener[] = []

  /**
   * @param send - carries one host message, as JSON text, to the VM.
   * @param fail - ends the run (the VM reported an out-of-memory error as the program's).
   * @param memoryMb - the VM's memory, for the out-of-memory message.
   */
  constructor(send: (json: string) => void, fail: (kind: CodeRunFailureKind, message: string) => void, memoryMb: number) {
    this.#send = send
    this.#fail = fail
    this.#memoryMb = memoryMb
  }

  /** Sends one host message; a value JSON cannot carry throws here, as a failed structured clone would. */
  postMessage(message: unknown): void {
    this.#send(JSON.stringify(message))
  }

  /** Adds a message listener (the host session). */
  addEventListener(_type: 'message', listener: WireListener): void {
    this.#listeners.push(listener)
  }

  /** Removes a message listener. */
  removeEventListener(_type: 'message', listener: WireListener): void {
    const at = this.#listeners.indexOf(listener)
    if (at >= 0) this.#listeners.splice(at, 1)
  }

  /**
   * One message from the VM (JSON text): parsed, adjusted for what JSON and QuickJS cannot express
   * (a call without arguments; program frames; memory exhaustion reported as the program's own
   * error), then handed to the listeners, which validate it.
   */
  receive(json: string): void {
    // Nobody listens once the session has settled: late messages are not even parsed.
    if (this.#listeners.length === 0) return
    let data: unknown
    try {
      data = JSON.parse(json)
    } catch {
      // Not JSON: not a message the protocol knows; the session would drop it too.
      return
    }
    let checkedArgBytes: number | undefined
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
      const type = own(data, 'type')
      // JSON cannot carry `undefined`: a call without arguments arrives without the key.
      if (type === 'call' && !Object.prototype.hasOwnProperty.call(data, 'args')) {
        Object.defineProperty(data, 'args', { value: undefined, enumerable: true, writable: true, configurable: true })
      }
      if (type === 'call') checkedArgBytes = weighArgs(own(data, 'args'), json.length)
      const error = type === 'done' ? own(data, 'error') : undefined
      if (typeof error === 'object' && error !== null) {
        if (isOutOfMemory(own(error, 'name'), own(error, 'message'))) {
          this.#fail('worker-exit', outOfMemoryMessage(this.#memoryMb))
          return
        }
        const stack = own(error, 'stack')
        if (typeof stack === 'string') (error as Record<string, unknown>).stack = remapQuickJsStack(stack)
      }
    }
    const event: WireMessageEvent = checkedArgBytes === undefined ? { data } : { data, checkedArgBytes }
    for (const listener of this.#listeners.slice()) listener(event)
  }
}
