/**
 * A Python run's journal (docs/durability.md): what entered its interpreter, in order, so that a
 * parked run resumes by replaying it in a fresh one; the clock and randomness the wasm reads.
 *
 * @module
 */
import { callKey, journalChars, MAX_JOURNAL_CHARS, newJournal, READ_CODES } from '../../src/code-runtime/journal.js'
import type { ParkedVm, RunJournal } from '../../src/code-runtime/journal.js'

/** The interpreter's readings of the world: `time.ticks_ms()` and friends, `time.time()`, and the seed of `random`. */
export type WasmReading = 'ticks' | 'time' | 'random'

/** The journal code of each reading (the TypeScript sandbox's codes: a monotonic clock, the wall clock, randomness). */
const CODES: Readonly<Record<WasmReading, string>> = { ticks: READ_CODES.now, time: READ_CODES.date, random: READ_CODES.rand }

/**
 * The wasm imports through which MicroPython's WebAssembly port reads the world, by reading: it
 * reads only through these (`time`, `datetime`, asyncio's scheduler, `random`'s seed), so wrapping
 * them where an instance is made routes every reading to the run's journal (thread-server.ts).
 */
export const READING_IMPORTS: Readonly<Record<string, WasmReading>> = { mp_js_ticks_ms: 'ticks', mp_js_time_ms: 'time', mp_js_random_u32: 'random' }

/** The message that ends a replay which does not match its journal. */
export function diverged(detail: string): string {
  return `REPLAY_DIVERGED: the resumed program did not repeat its journal: ${detail}`
}

/**
 * The key a call message is journaled under, from its canonical JSON (the host checks a stored
 * state's waiting calls against keys of `JSON.stringify({ type, id, global, name, args })`;
 * MicroPython spells some numbers otherwise, `1.5e-07` for `1.5e-7`).
 */
export function pythonCallKey(message: { readonly id?: unknown; readonly global?: unknown; readonly name?: unknown; readonly args?: unknown }): string {
  return callKey(JSON.stringify({ type: 'call', id: message.id, global: message.global, name: message.name, args: message.args }))
}

/** One run's journal: recorded live, or replayed (then recorded on) after a park. */
export class PythonJournal {
  /** `undefined` once it outgrew {@link MAX_JOURNAL_CHARS} or the run keeps none: the run cannot park. */
  #journal: RunJournal | undefined
  #chars = 0
  /** While resuming: the parked VM being replayed and how far the replay is. */
  #replay: { readonly parked: ParkedVm; read: number; call: number } | undefined
  /** Ends the run with a divergence (called at most once; the thread stops the interpreter). */
  readonly #fail: (message: string) => void
  #failed = false

  constructor(fail: (message: string) => void, keep: boolean, replay?: ParkedVm) {
    this.#fail = fail
    if (replay !== undefined) {
      // A copy: the parked state stays as it was when it parked, whatever this run adds.
      const j = replay.journal
      this.#journal = { inputs: [...j.inputs], reads: [...j.reads], ops: j.ops, calls: [...j.calls] }
      this.#chars = journalChars(j)
      this.#replay = { parked: replay, read: 0, call: 0 }
    } else this.#journal = keep ? newJournal() : undefined
  }

  /** True while the journal is being replayed. */
  get replaying(): boolean {
    return this.#replay !== undefined
  }

  /** The parked VM being replayed (while replaying). */
  get parked(): ParkedVm | undefined {
    return this.#replay?.parked
  }

  /** The journal to park with, if it is whole and within `maxChars`; `undefined` while replaying. */
  parkable(maxChars: number): RunJournal | undefined {
    if (this.#replay !== undefined || this.#chars > maxChars) return undefined
    return this.#journal
  }

  #add(chars: number): RunJournal | undefined {
    this.#chars += chars
    if (this.#chars > MAX_JOURNAL_CHARS) this.#journal = undefined
    return this.#journal
  }

  /** A live input: the start text, a host delivery (string), or a timer that fired (its id). */
  input(entry: string | number): void {
    this.#add(typeof entry === 'string' ? entry.length + 1 : 9)?.inputs.push(entry)
  }

  #diverged(detail: string): void {
    if (this.#failed) return
    this.#failed = true
    this.#fail(diverged(detail))
  }

  /** True once the replay diverged. */
  get failed(): boolean {
    return this.#failed
  }

  /** A reading: the live value, journaled; while replaying, the journal's (a mismatch fails the run, and the live value is returned to an interpreter about to be stopped). */
  read(reading: WasmReading, live: () => number): number {
    const code = CODES[reading]
    const replay = this.#replay
    if (replay !== undefined) {
      const journal = replay.parked.journal
      if (replay.read >= journal.reads.length) this.#diverged(`it read the clock or randomness more often than its journal holds (${journal.reads.length})`)
      else if (journal.ops[replay.read] !== code) this.#diverged(`reading ${replay.read + 1} of the clock or randomness was ${reading}, the journal holds another`)
      else {
        const value = journal.reads[replay.read++]!
        return typeof value === 'number' ? value : Number(value)
      }
      return live()
    }
    const value = live()
    const journal = this.#add(9)
    if (journal !== undefined) {
      journal.reads.push(value)
      journal.ops += code
    }
    return value
  }

  /** A call the program made: journaled live; while replaying, it must be the journal's next (else the run fails). */
  call(key: string): void {
    const replay = this.#replay
    if (replay !== undefined) {
      const expected = replay.parked.journal.calls[replay.call]
      if (expected === key) {
        replay.call++
        return
      }
      const name = key.split('#')[0]
      this.#diverged(expected === undefined ? `it made a call the journal does not hold (${name})` : `call ${replay.call + 1} was ${name} where the journal holds ${expected.split('#')[0]} (or the same call with other arguments)`)
      return
    }
    this.#add(key.length + 1)?.calls.push(key)
  }

  /** Something only a live run does happened while replaying (the program finished): the run fails. */
  divergedBy(detail: string): void {
    this.#diverged(detail)
  }

  /** The replay delivered every input: checks that the program made every call and reading again, then records live. False: it diverged. */
  endReplay(): boolean {
    const replay = this.#replay
    if (replay === undefined) return !this.#failed
    this.#replay = undefined
    const { journal } = replay.parked
    if (replay.call < journal.calls.length) this.#diverged(`it made ${replay.call} of the ${journal.calls.length} calls its journal holds; the next was ${journal.calls[replay.call]!.split('#')[0]}`)
    else if (replay.read < journal.reads.length) this.#diverged(`it read the clock or randomness ${replay.read} times, its journal ${journal.reads.length}`)
    return !this.#failed
  }
}
