/**
 * The host end of a channel whose sandbox side speaks JSON text: the QuickJS VM, inline (workerd)
 * or in a sandbox thread.
 * @module
 */
import type { CodeRunFailureKind } from './contract.js'
import { JsonAdoption, adoptParsedJson } from '../json/lossless.js'
import { ARG_BYTES_PER_NODE } from './limits.js'
import { MAX_VALUE_DEPTH } from './render.js'
import { afterHostTurn } from './sliced-delivery.js'
import { SlicedJsonParse } from './sliced-json.js'
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

/**
 * Units of adoption one turn of the host's event loop does at most (a value walked, a container
 * entered or frozen: {@link JsonAdoption.visited}): a larger argument is adopted over several
 * turns, its run's later messages held behind it.
 */
export const ADOPT_SLICE_NODES = 10_000

/** The weight the session checks for adopted arguments, or undefined (too deep, or lossy: the session refuses them). */
function weigh(adopted: { readonly nodes: number; readonly depth: number } | undefined, textLength: number): number | undefined {
  if (adopted === undefined || adopted.depth > MAX_VALUE_DEPTH) return undefined
  return textLength + ARG_BYTES_PER_NODE * adopted.nodes
}

/**
 * Characters of VM messages held behind a call being adopted (64 MB as UTF-16): a program that
 * keeps sending while its large calls are read cannot make the host hold more. Past it the run fails.
 */
export const MAX_HELD_CHARS = 32 * 1024 * 1024

/**
 * Characters of a message parsed in one `JSON.parse` (well under a millisecond): a longer message
 * is parsed in bounded steps ({@link SlicedJsonParse}), its budget shared with adoption's.
 */
export const PARSE_AT_ONCE_CHARS = 64 * 1024

/** A message being read over several turns: its text being parsed, or a call's arguments being adopted. */
type Reading =
  | { readonly parse: SlicedJsonParse; readonly textLength: number }
  | { readonly data: object; readonly adoption: JsonAdoption; readonly textLength: number }

function own(data: object, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(data, key) ? (data as Record<string, unknown>)[key] : undefined
}

/** A {@link WireEndpoint} for a host session over a JSON-text sandbox. */
export class JsonWireEndpoint implements WireEndpoint {
  readonly #send: (json: string) => void
  readonly #fail: (kind: CodeRunFailureKind, message: string) => void
  readonly #memoryMb: number
  readonly #listeners: WireListener[] = []
  /** Messages (JSON text) that arrived while a message was still being read: handled in order after it. */
  #held: string[] = []
  /** The characters of {@link JsonWireEndpoint.#held}, bounded by {@link MAX_HELD_CHARS}. */
  #heldChars = 0
  /** Set once the held bound failed the run: nothing after it is read. */
  #flooded = false
  #reading: Reading | undefined
  /** Values this turn may still adopt, or -1 when no turn is open (the next adoption opens one). */
  #turnLeft = -1

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
   * error), then handed to the listeners, which validate it. A message longer than {@link
   * PARSE_AT_ONCE_CHARS} is parsed, and a call's arguments adopted, at most {@link
   * ADOPT_SLICE_NODES} units a turn; until they are, later messages wait in order.
   */
  receive(json: string): void {
    // Nobody listens once the session has settled: late messages are not even parsed.
    if (this.#listeners.length === 0 || this.#flooded) return
    if (this.#reading !== undefined) {
      this.#heldChars += json.length
      if (this.#heldChars > MAX_HELD_CHARS) {
        this.#reading = undefined
        this.#held = []
        this.#heldChars = 0
        this.#flooded = true
        this.#fail('exception', `the program sent more than ${MAX_HELD_CHARS} characters of messages while the host was still reading a large call's arguments; await calls (or batch them) instead of flooding them`)
        return
      }
      this.#held.push(json)
      return
    }
    this.#handle(json)
  }

  /** Opens this turn's adoption budget if none is open; the next macrotask closes it. */
  #openTurn(): void {
    if (this.#turnLeft >= 0) return
    this.#turnLeft = ADOPT_SLICE_NODES
    afterHostTurn(() => {
      this.#turnLeft = -1
    })
  }

  /** Adopts what this turn's budget allows; true once the arguments are adopted. */
  #advance(adoption: JsonAdoption): boolean {
    this.#openTurn()
    const before = adoption.visited
    const done = adoption.step(this.#turnLeft)
    this.#turnLeft = Math.max(0, this.#turnLeft - (adoption.visited - before))
    return done
  }

  /** Parses what this turn's budget allows; true once the text is read. */
  #advanceParse(parse: SlicedJsonParse): boolean {
    this.#openTurn()
    if (this.#turnLeft === 0) return false
    const before = parse.used
    const done = parse.step(this.#turnLeft)
    this.#turnLeft = Math.max(0, this.#turnLeft - (parse.used - before))
    return done
  }

  #handle(json: string): void {
    if (json.length > PARSE_AT_ONCE_CHARS) {
      const parse = new SlicedJsonParse(json)
      if (!this.#advanceParse(parse)) {
        this.#reading = { parse, textLength: json.length }
        afterHostTurn(this.#resume)
        return
      }
      // Not JSON: not a message the protocol knows; the session would drop it too.
      if (!parse.invalid) this.#handleParsed(parse.value, json.length, parse.shared)
      return
    }
    let data: unknown
    try {
      data = JSON.parse(json)
    } catch {
      return
    }
    this.#handleParsed(data, json.length)
  }

  #handleParsed(data: unknown, textLength: number, shared: readonly object[] = []): void {
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
      const type = own(data, 'type')
      // JSON cannot carry `undefined`: a call without arguments arrives without the key.
      if (type === 'call' && !Object.prototype.hasOwnProperty.call(data, 'args')) {
        Object.defineProperty(data, 'args', { value: undefined, enumerable: true, writable: true, configurable: true })
      }
      if (type === 'call') {
        const args = own(data, 'args')
        if (args === undefined) return this.#deliver(data, 0)
        if (typeof args !== 'object' || args === null) return this.#deliver(data, weigh(adoptParsedJson(args), textLength))
        const adoption = new JsonAdoption(args, shared)
        if (this.#advance(adoption)) return this.#deliver(data, weigh(adoption.result, textLength))
        this.#reading = { data, adoption, textLength }
        afterHostTurn(this.#resume)
        return
      }
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
    this.#deliver(data, undefined)
  }

  /** A later turn: reads the next slice; once the message is read, handles it and then the messages held behind it. */
  readonly #resume = (): void => {
    const reading = this.#reading
    // A settled session (an abort, a failure, the held bound) takes nothing more: drop the work and what waits.
    if (reading === undefined || this.#listeners.length === 0) {
      this.#reading = undefined
      this.#held = []
      this.#heldChars = 0
      return
    }
    if ('parse' in reading) {
      if (!this.#advanceParse(reading.parse)) {
        afterHostTurn(this.#resume)
        return
      }
      this.#reading = undefined
      // The parsed message may be a call whose arguments are adopted in turns: what is held waits behind it too.
      if (!reading.parse.invalid) this.#handleParsed(reading.parse.value, reading.textLength, reading.parse.shared)
    } else {
      if (!this.#advance(reading.adoption)) {
        afterHostTurn(this.#resume)
        return
      }
      this.#reading = undefined
      this.#deliver(reading.data, weigh(reading.adoption.result, reading.textLength))
    }
    if (this.#reading !== undefined) return
    const held = this.#held
    this.#held = []
    this.#heldChars = 0
    for (let i = 0; i < held.length; i++) {
      if (this.#listeners.length === 0) return
      if (this.#reading !== undefined) {
        // Another large message: the rest waits behind it again, in order.
        this.#held = held.slice(i).concat(this.#held)
        for (const text of this.#held) this.#heldChars += text.length
        return
      }
      this.#handle(held[i]!)
    }
  }

  #deliver(data: unknown, checkedArgBytes: number | undefined): void {
    const event: WireMessageEvent = checkedArgBytes === undefined ? { data } : { data, checkedArgBytes }
    for (const listener of this.#listeners.slice()) listener(event)
  }
}
