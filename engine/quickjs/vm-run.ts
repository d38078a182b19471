/**
 * Drives one QuickJS sandbox through one run, the only place VM code is entered: queued
 * messages, host timers, and the interrupt handler that enforces the budgets.
 *
 * @module
 */
import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten-core'
import type { CodeRunFailureKind } from '../../src/code-runtime/contract.js'
import { isOutOfMemory, outOfMemoryMessage } from '../../src/code-runtime/json-endpoint.js'
import { MAX_CALL_ARG_NODES } from '../../src/code-runtime/limits.js'
import { MAX_VALUE_DEPTH } from '../../src/code-runtime/render.js'
import { scanJsonText } from '../../src/json/scan.js'
import { toErrorData } from '../../src/errors.js'
import type { NondeterministicOp, QuickJsSandbox } from './engine.js'
import { directDeliver, directHostCalls, directJobs } from './host-calls.js'
import { callKey, journalChars, MAX_JOURNAL_CHARS, newJournal, READ_CODES, replayBudgetMessage } from '../../src/code-runtime/journal.js'
import type { ParkedVm, RunJournal } from '../../src/code-runtime/journal.js'

/**
 * The interrupt handler runs about every 10 000 interpreter steps. Where the clock does
 * not advance during synchronous code (workerd in production), each call is charged at
 * least this many ms of compute, an upper bound on the call rate of fast hardware (this
 * machine measured ~11 calls/ms in a tight loop), so a hot loop still hits its budget.
 */
const MIN_MS_PER_INTERRUPT = 1 / 64
/** Host timers one run may hold at once. */
const MAX_TIMERS = 10_000

/** Budgets the VM enforces itself. */
export interface VmRunLimits {
  readonly computeMs: number
  readonly memoryMb: number
  /**
   * The wall ceiling, checked from the interrupt handler too, for hosts whose clock does
   * not advance during synchronous code (workerd). Absent: the host session's timer alone
   * enforces it (a sandbox thread's host, whose clock runs).
   */
  readonly maxWallMs?: number
  /**
   * While resuming: the most compute the replay of the journal may take (what is left of
   * the run's `maxReplayMs`); past it the run ends as a `timeout` naming `maxReplayMs`.
   */
  readonly replayMs?: number
}

/** Where a run reports what the VM does. */
export interface VmRunHooks {
  /** The VM posted one message (JSON text). */
  output(json: string): void
  /** The VM failed, or a budget fired inside it: the run is over. Called at most once. */
  fail(kind: CodeRunFailureKind, message: string): void
  /** Polled from the interrupt handler: true stops the VM at once (an abort from another thread, say). */
  stopRequested?(): boolean
  /** The wall-clock ms charged to the run so far (the host session's account, which holds may pause). */
  wallElapsedMs?(): number
  /**
   * Told when the VM starts computing (`running: true`) and stops, with the busy ms so
   * far: a sandbox thread publishes both, so that the host meters a VM stuck in a long
   * built-in (which runs no interrupt checks) while it is stuck.
   */
  segment?(running: boolean, busyMs: number): void
  /** A resumed run has replayed its journal (spending `busyMs` of compute on it) and goes on live. */
  replayed?(busyMs: number): void
}

/** How a run starts: fresh, or resuming a parked VM by replaying its journal. */
export interface VmRunStart {
  /** The parked VM to resume: its journal is replayed (no message leaves the VM meanwhile), then the run continues live. */
  readonly replay?: ParkedVm
  /** `false`: keep no journal (a runtime whose runs never park). Default `true`. */
  readonly journal?: boolean
}

/** The message that ends a replay which does not match its journal. The run fails with it. */
function diverged(detail: string): string {
  return `REPLAY_DIVERGED: the resumed program did not repeat its journal: ${detail}`
}

/** Where the arguments of a call message (as the in-VM script writes it, `quickjs-entry.ts`) begin, or -1. */
function callArgsStart(json: string): number {
  const head = '{"type":"call","id":'
  if (!json.startsWith(head)) return -1
  let i = head.length
  while (i < json.length && json.charCodeAt(i) >= 0x30 && json.charCodeAt(i) <= 0x39) i++
  for (const key of [',"global":"', ',"name":"']) {
    if (!json.startsWith(key, i)) return -1
    i += key.length
    // The string's body; an escape takes the next character with it.
    while (i < json.length && json.charCodeAt(i) !== 0x22) i += json.charCodeAt(i) === 0x5c ? 2 : 1
    i++
  }
  const args = ',"args":'
  return json.startsWith(args, i) ? i + args.length : -1
}

/**
 * Refuses a binding call whose arguments hold more than {@link MAX_CALL_ARG_NODES} JSON
 * values or nest deeper than `MAX_VALUE_DEPTH`, by throwing from the VM's `post`: the
 * in-VM script turns that into the call's rejected promise, and the run continues. One
 * linear pass over text the VM already built, charged to the run's compute (it runs
 * inside the VM's call), so the host's thread only ever parses bounded text.
 */
export function checkCallArgs(json: string): void {
  const start = callArgsStart(json)
  if (start < 0) return
  const scan = scanJsonText(json, start, json.length - 1, MAX_CALL_ARG_NODES, MAX_VALUE_DEPTH)
  if (scan.nodes > MAX_CALL_ARG_NODES) {
    throw new RangeError(
      `they hold more than ${MAX_CALL_ARG_NODES} JSON values (object keys count); send fewer values per call, or data as one string`,
    )
  }
  if (scan.depth > MAX_VALUE_DEPTH) throw new RangeError(`they nest deeper than ${MAX_VALUE_DEPTH} levels; flatten them`)
}

type InboxItem = { readonly kind: 'message'; readonly json: string } | { readonly kind: 'timer'; readonly id: number }

/** One run in one sandbox, from acquisition to release. */
export class VmRun {
  /** Resolves once the run has let go of its VM (released whole) and cleared its host timers. Never rejects. */
  readonly finished: Promise<void>

  readonly #limits: VmRunLimits
  readonly #hooks: VmRunHooks
  readonly #inbox: InboxItem[] = []
  readonly #timers = new Map<number, ReturnType<typeof setTimeout>>()
  readonly #startedAt = performance.now()
  #stopped = false
  #wake: (() => void) | undefined
  #busyMs = 0
  #interrupts = 0
  #segmentStart = 0
  #sandbox: QuickJsSandbox | undefined
  /** When each armed timer is due (`performance.now()`), for parking. */
  readonly #due = new Map<number, number>()
  /** What entered the VM so far; `undefined` once it outgrew {@link MAX_JOURNAL_CHARS} (the run then cannot park). */
  #journal: RunJournal | undefined = newJournal()
  #journalChars = 0
  /** While resuming: the parked VM being replayed and how far the replay is. */
  #replay: { readonly parked: ParkedVm; input: number; read: number; call: number; readonly armed: Map<number, number> } | undefined

  constructor(acquire: () => Promise<QuickJsSandbox>, limits: VmRunLimits, hooks: VmRunHooks, start: VmRunStart = {}) {
    this.#limits = limits
    this.#hooks = hooks
    if (start.journal === false) this.#journal = undefined
    if (start.replay !== undefined) {
      // A copy: the parked state stays what it was when it parked (a caller may keep it, or store it later), whatever this run adds.
      this.#journal = copyJournal(start.replay.journal)
      this.#journalChars = journalChars(start.replay.journal)
      this.#replay = { parked: start.replay, input: 0, read: 0, call: 0, armed: new Map() }
    }
    this.finished = this.#drive(acquire)
  }

  /**
   * Parks the run if nothing is due: no delivery queued, no promise job pending, no timer
   * due within `afterMs`, the journal whole and within `maxChars`. Returns the parked VM (journal, clock,
   * timers) and stops the run (its VM is released); `undefined` leaves it running.
   */
  park(afterMs: number, maxChars = Number.POSITIVE_INFINITY): ParkedVm | undefined {
    const sandbox = this.#sandbox
    const journal = this.#journal
    if (this.#stopped || this.#replay !== undefined || sandbox === undefined || journal === undefined) return undefined
    // The runtime's room for parked journals: a run that does not fit keeps its VM (and its slot).
    if (this.#journalChars > maxChars) return undefined
    if (this.#inbox.length > 0 || sandbox.runtime.hasPendingJob()) return undefined
    const at = performance.now()
    const timers: (readonly [number, number])[] = []
    for (const [id, due] of this.#due) {
      if (due - at < afterMs) return undefined
      timers.push([id, due - at])
    }
    const parked: ParkedVm = { journal, clockMs: at - sandbox.timeOrigin, timers }
    this.stop()
    return parked
  }

  #journalAdd(chars: number): RunJournal | undefined {
    this.#journalChars += chars
    if (this.#journalChars > MAX_JOURNAL_CHARS) this.#journal = undefined
    return this.#journal
  }

  /** A clock or randomness reading: journaled live, answered from the journal while replaying. */
  #read(op: NondeterministicOp, live: () => string | number): string | number {
    const code = READ_CODES[op]
    const replay = this.#replay
    if (replay !== undefined) {
      const journal = replay.parked.journal
      if (replay.read < journal.reads.length) {
        if (journal.ops[replay.read] !== code) {
          this.fail('exception', diverged(`reading ${replay.read + 1} of the clock or randomness was ${op}, the journal holds another`))
          return live()
        }
        return journal.reads[replay.read++]!
      }
      this.fail('exception', diverged(`it read the clock or randomness more often than its journal holds (${journal.reads.length})`))
      return live()
    }
    const value = live()
    const journal = this.#journalAdd(typeof value === 'string' ? value.length + 1 : 9)
    if (journal !== undefined) {
      journal.reads.push(value)
      journal.ops += code
    }
    return value
  }

  /** A message the VM posted. Replaying: a call must be the journal's next one, and nothing leaves the VM. */
  #posted(json: string): void {
    const isCall = json.startsWith('{"type":"call"')
    const replay = this.#replay
    if (replay !== undefined) {
      if (!isCall) return
      const key = callKey(json)
      const expected = replay.parked.journal.calls[replay.call]
      if (expected === key) {
        replay.call++
        return
      }
      this.fail('exception', diverged(expected === undefined ? `it made a call the journal does not hold (${key.split('#')[0]})` : `call ${replay.call + 1} was ${key.split('#')[0]} where the journal holds ${expected.split('#')[0]} (or the same call with other arguments)`))
      return
    }
    if (isCall && this.#journal !== undefined) {
      const key = callKey(json)
      this.#journalAdd(key.length + 1)?.calls.push(key)
    }
    this.#hooks.output(json)
  }

  /** Whether the run obtained a sandbox (a runtime pre-builds the next one only when building works). */
  get acquiredSandbox(): boolean {
    return this.#sandbox !== undefined
  }

  /** Queues one host message (JSON text) for the VM. */
  input(json: string): void {
    if (this.#stopped) return
    this.#inbox.push({ kind: 'message', json })
    this.#poke()
  }

  /**
   * Ends the run: the VM is interrupted at its next check and released. Safe from inside
   * the VM (an interrupt handler, a host function): it only marks; the drive loop frees
   * the VM once control is back on the host.
   */
  stop(): void {
    this.#stopped = true
    this.#poke()
  }

  /** Busy time: the clock while the VM runs, but never less than the interrupt count allows. */
  computeMs(): number {
    const running = this.#segmentStart > 0 ? performance.now() - this.#segmentStart : 0
    return Math.max(this.#busyMs + running, this.#interrupts * MIN_MS_PER_INTERRUPT)
  }

  #poke(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  /** Ends the run with a failure the VM's driver found (its host's checks, not the program's outcome). First one wins. */
  fail(kind: CodeRunFailureKind, message: string): void {
    this.#fail(kind, message)
    this.#poke()
  }

  #fail(kind: CodeRunFailureKind, message: string): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#hooks.fail(kind, message)
  }

  #interrupt(): boolean {
    if (this.#stopped) return true
    if (this.#hooks.stopRequested?.() === true) {
      this.#stopped = true
      return true
    }
    this.#interrupts++
    const compute = this.computeMs()
    const { computeMs, maxWallMs, replayMs } = this.#limits
    if (compute >= computeMs) {
      this.#fail('timeout', `compute budget of ${computeMs} ms exhausted`)
      return true
    }
    if (this.#replay !== undefined && replayMs !== undefined && compute >= replayMs) {
      this.#fail('timeout', replayBudgetMessage(replayMs))
      return true
    }
    if (maxWallMs === undefined) return false
    // Compute the clock did not see (a frozen clock) still counts towards the wall.
    const clockBusy = this.#busyMs + (performance.now() - this.#segmentStart)
    const elapsed = this.#hooks.wallElapsedMs?.() ?? performance.now() - this.#startedAt
    const wall = elapsed + Math.max(0, compute - clockBusy)
    if (wall >= maxWallMs) {
      this.#fail('timeout', `wall-clock ceiling of ${maxWallMs} ms reached`)
      return true
    }
    return false
  }

  #setTimer(id: number, delay: number): boolean {
    const replay = this.#replay
    if (replay !== undefined) {
      // Replaying: the journal says when timers fired; remember which are armed, to arm them live after.
      replay.armed.delete(id)
      if (delay < 0) return true
      // The same answer the live run had: the armed set mirrors the live timer table.
      if (replay.armed.size >= MAX_TIMERS) return false
      replay.armed.set(id, delay)
      return true
    }
    const existing = this.#timers.get(id)
    if (existing !== undefined) {
      clearTimeout(existing)
      this.#timers.delete(id)
      this.#due.delete(id)
    }
    if (delay < 0 || this.#stopped) return delay < 0
    if (this.#timers.size >= MAX_TIMERS) return false
    this.#armTimer(id, delay)
    return true
  }

  #armTimer(id: number, delay: number): void {
    this.#due.set(id, performance.now() + delay)
    this.#timers.set(
      id,
      setTimeout(() => {
        this.#timers.delete(id)
        this.#due.delete(id)
        this.#inbox.push({ kind: 'timer', id })
        this.#poke()
      }, delay),
    )
  }

  /** The next delivery: the journal's while replaying, then the live inbox. Journals live ones. */
  #nextInput(): InboxItem | undefined {
    const replay = this.#replay
    if (replay !== undefined) {
      const entry = replay.parked.journal.inputs[replay.input++]
      if (entry === undefined) return undefined
      if (typeof entry === 'number') replay.armed.delete(entry)
      return typeof entry === 'string' ? { kind: 'message', json: entry } : { kind: 'timer', id: entry }
    }
    const next = this.#inbox.shift()
    if (next === undefined) return undefined
    const journal = this.#journalAdd(next.kind === 'message' ? next.json.length + 1 : 9)
    journal?.inputs.push(next.kind === 'message' ? next.json : next.id)
    return next
  }

  /**
   * The replay has delivered its whole journal and the VM is idle: check that the VM did
   * all it did before (every call, every reading), then go live: the clock resumes where
   * it stopped, the armed timers run for the time they had left.
   */
  #endReplay(sandbox: QuickJsSandbox): void {
    const replay = this.#replay!
    const { journal, clockMs, timers } = replay.parked
    this.#replay = undefined
    if (replay.call < journal.calls.length) {
      this.fail('exception', diverged(`it made ${replay.call} of the ${journal.calls.length} calls its journal holds; the next was ${journal.calls[replay.call]!.split('#')[0]}`))
      return
    }
    if (replay.read < journal.reads.length) {
      this.fail('exception', diverged(`it read the clock or randomness ${replay.read} times, its journal ${journal.reads.length}`))
      return
    }
    sandbox.timeOrigin = performance.now() - clockMs
    const left = new Map(timers)
    for (const [id, delay] of replay.armed) {
      if (this.#timers.size >= MAX_TIMERS) break
      this.#armTimer(id, Math.max(0, left.get(id) ?? delay))
    }
    this.#hooks.replayed?.(this.#busyMs)
  }

  #endSegment(): void {
    this.#busyMs += performance.now() - this.#segmentStart
    this.#segmentStart = 0
    this.#hooks.segment?.(false, this.#busyMs)
  }

  /** Runs one VM entry with the compute clock running; a VM-level failure ends the run. */
  #enter(ctx: QuickJSContext, call: () => { error?: QuickJSHandle; dispose?: () => void }): void {
    this.#segmentStart = performance.now()
    this.#hooks.segment?.(true, this.#busyMs)
    let error: QuickJSHandle | undefined
    try {
      const result = call()
      error = result.error
      if (error === undefined) result.dispose?.()
    } catch (thrown) {
      // A wasm trap or an emscripten abort: the instance is unusable.
      this.#endSegment()
      if (this.#sandbox !== undefined) this.#sandbox.crashed = true
      this.#fail('worker-exit', `the QuickJS sandbox crashed: ${toErrorData(thrown).message}`)
      return
    }
    this.#endSegment()
    if (error === undefined) return
    let name: unknown
    let message: unknown
    try {
      // Only reached for failures outside the program's own promise chain (the
      // bootstrap catches the program's errors): interrupts, memory exhaustion.
      const dumped = ctx.dump(error) as { name?: unknown; message?: unknown } | null
      name = dumped?.name
      message = dumped?.message
    } catch {
      // Unreadable: reported generically below.
    } finally {
      error.dispose()
    }
    if (isOutOfMemory(name, message)) this.#fail('worker-exit', outOfMemoryMessage(this.#limits.memoryMb))
    else this.#fail('worker-exit', `the QuickJS sandbox failed: ${typeof name === 'string' ? name : 'Error'}: ${typeof message === 'string' ? message : 'unknown error'}`)
  }

  async #drive(acquire: () => Promise<QuickJsSandbox>): Promise<void> {
    try {
      if (this.#stopped) return
      let sandbox: QuickJsSandbox
      try {
        sandbox = await acquire()
      } catch (error) {
        this.#fail('worker-exit', `the QuickJS sandbox could not be created: ${toErrorData(error).message}`)
        return
      }
      this.#sandbox = sandbox
      if (this.#stopped) return
      // Every binding call crosses into a host function once, and its reply comes back
      // through `deliver`: both take the direct path.
      directHostCalls(sandbox.runtime, sandbox.context)
      const direct = directDeliver(sandbox.context)
      const pump = directJobs(sandbox.runtime, sandbox.context)
      const attached = sandbox.attach({
        post: (json) => {
          if (this.#stopped) return
          checkCallArgs(json)
          this.#posted(json)
        },
        read: (op, live) => this.#read(op, live),
        timer: (id, delay) => this.#setTimer(id, delay),
        interrupt: () => this.#interrupt(),
      })
      const { runtime, context, deliver, fire } = sandbox
      if (!attached || deliver === undefined || fire === undefined) {
        // Unreachable by construction; a sandbox is never shared between runs.
        this.#fail('worker-exit', 'the QuickJS sandbox could not be created: it was not fresh')
        return
      }
      while (!this.#stopped) {
        // Promise jobs run to exhaustion before each delivery (a browser's microtask
        // checkpoint): the VM's state then depends only on the order of deliveries, which the journal keeps.
        if (runtime.hasPendingJob()) {
          this.#enter(context, () => {
            if (pump !== undefined) {
              const error = pump()
              return error === undefined ? {} : { error }
            }
            const jobs = runtime.executePendingJobs()
            return jobs.error === undefined ? { dispose: () => jobs.dispose() } : { error: jobs.error }
          })
          continue
        }
        const next = this.#nextInput()
        if (next !== undefined) {
          this.#enter(context, () => {
            if (direct !== undefined && next.kind === 'message') {
              const error = direct(deliver, next.json)
              return error === undefined ? {} : { error }
            }
            const arg = next.kind === 'message' ? context.newString(next.json) : context.newNumber(next.id)
            try {
              return context.callFunction(next.kind === 'message' ? deliver : fire, context.undefined, arg)
            } finally {
              arg.dispose()
            }
          })
          continue
        }
        if (this.#replay !== undefined) {
          this.#endReplay(sandbox)
          continue
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve
        })
      }
    } finally {
      this.#stopped = true
      for (const id of this.#timers.values()) clearTimeout(id)
      this.#timers.clear()
      this.#due.clear()
      this.#inbox.length = 0
      this.#sandbox?.release()
    }
  }
}

/** A journal's own copy (its arrays), so that appending to it leaves the original as it was. */
function copyJournal(journal: RunJournal): RunJournal {
  return { inputs: [...journal.inputs], reads: [...journal.reads], ops: journal.ops, calls: [...journal.calls] }
}
