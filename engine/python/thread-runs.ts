/**
 * One Python thread's current run, journaled (engine/python/journal.ts): every entry into its
 * interpreter, its timers, what it sends, and parking and replay (docs/durability.md).
 *
 * @module
 */
import { epochNow, BUSY_SLOT, SEGMENT_SLOT, STOP_SLOT } from '../../src/code-runtime/sandbox-protocol.js'
import type { ThreadEvent } from '../../src/code-runtime/sandbox-protocol.js'
import { replayBudgetMessage } from '../../src/code-runtime/journal.js'
import type { ParkedVm } from '../../src/code-runtime/journal.js'
import { pythonCallKey, PythonJournal } from './journal.js'
import type { WasmReading } from './journal.js'

/** One timer the interpreter's asyncio armed: a 0 ms one runs as a microtask (not journaled: its order follows from the inputs). */
export interface VmTimer {
  readonly callback: () => void
  readonly delay: number
  /** The platform timer while armed live; absent for a 0 ms timer, and while a replay holds it. */
  handle?: ReturnType<typeof setTimeout>
  /** When it is due (`performance.now()`), while armed live. */
  due?: number
}

/** One interpreter with its run's state. */
export interface Interpreter {
  readonly mp: unknown
  readonly start: (text: string) => void
  readonly deliver: (text: string) => void
  /** The run it serves (0 while idle), where its output goes. */
  run: number
  logBytes: number
  maxLogBytes: number
  readonly timers: Map<number, VmTimer>
  /** 0 ms timers queued and not yet run. */
  zeroTimers: number
  /** `time.ticks_ms()` reads `performance.now()` minus this: a resumed run's clock goes on where it parked. */
  timeOrigin: number
  /** True while it replays a parked run's journal: nothing it sends leaves the thread. */
  replaying: boolean
  readonly stdout: number[]
  readonly stderr: number[]
  dead: boolean
  /** Inline (one realm for many interpreters): puts this interpreter's JS globals in place for an entry, and back after. */
  readonly realm?: InterpreterRealm
}

/** An interpreter's share of the realm's globals (the loader keeps its state on `globalThis`). */
export interface InterpreterRealm {
  enter(): void
  leave(): void
}

/**
 * Loop iterations (wasm `loop` headers) per call of the metered wasm's budget check
 * (scripts/build-micropython-bounded.mjs: `STEPS_PER_CHECK`).
 */
export const STEPS_PER_CHECK = 10_000

/**
 * Steps a compute millisecond is worth where the clock cannot be trusted (workerd freezes it
 * during synchronous code): `bench:python-meter` measured ~17 800 a ms on 2 shared cores at load
 * 19; this is about what an unloaded core does, so a frozen clock stops a hot loop near its
 * budget (docs/runtimes.md). Where the clock runs, the clock stops it first.
 */
export const STEPS_PER_MS = 50_000

/** Thrown by the budget check through the wasm frames: the interpreter is discarded after. */
export class BudgetStop extends Error {}

/** The thread's state of its current run. */
export interface CurrentRun {
  readonly id: number
  readonly vm: Interpreter
  busyMs: number
  readonly computeMs: number
  /** While resuming: the most compute the replay may take. */
  readonly replayMs: number | undefined
  readonly journal: PythonJournal
  /** Host deliveries that arrived while the run was starting or replaying, in order. */
  readonly held: string[]
  /** True while its replay is under way: deliveries wait in `held`. */
  holding: boolean
  /** Set once the run parked or failed in the thread: nothing more enters its interpreter. */
  over: boolean
  /** Loop steps the metered wasm's budget check counted while the clock stood still (inline runtimes). */
  steps: number
  /** The clock at the previous check (epoch ms). */
  lastCheck: number
}

/** What a run starts from: a fresh start (the wrapped start text) or a parked VM to replay. */
export interface RunStart {
  readonly id: number
  readonly vm: Interpreter
  readonly computeMs: number
  readonly startText: string
  readonly held: string[]
  /** `false`: the run keeps no journal (it never parks). */
  readonly journal: boolean
  readonly replay?: ParkedVm
  readonly replayMs?: number
}

/** Drives the thread's current run: the only place its interpreter is entered. */
export class RunDriver {
  /** The run the thread serves, if any. */
  current: CurrentRun | undefined
  /** The busy-time slots the host reads (shared memory), once booted. */
  busy: Float64Array | undefined
  /** The host's stop slot (shared memory), once booted: the id of a run it ended or aborted. */
  stop: Int32Array | undefined
  readonly #post: (message: ThreadEvent | string) => void
  readonly #memoryMb: () => number
  /** The interpreter executing now (readings outside any run's entry, as the prelude's at build time, are not journaled). */
  #entered: Interpreter | undefined

  /** When the current entry began (epoch ms). */
  #enteredAt = 0

  /** The host's meter without shared memory (`PythonThreadChannel.busy`). */
  readonly #meter: ((since: number, busyMs: number) => void) | undefined

  /** The wasm's readings reach {@link RunDriver.read} through its instantiation (thread-server.ts). */
  constructor(post: (message: ThreadEvent | string) => void, memoryMb: () => number, meter?: (since: number, busyMs: number) => void) {
    this.#post = post
    this.#memoryMb = memoryMb
    this.#meter = meter
  }

  /**
   * The metered wasm's `toolyard_budget_check`, every {@link STEPS_PER_CHECK} loop steps: throws
   * {@link BudgetStop} once the entry's run is over (ended, aborted: the host's stop slot, read
   * mid-computation where memory is shared) or its compute budget is spent, by the clock or by steps. Steps count only between checks that read the same time: a
   * C loop runs ~10x more loop steps a ms than the bytecode loop `STEPS_PER_MS` was measured on,
   * so a moving clock must be the measure; a frozen one (workerd) leaves only steps.
   */
  check(): void {
    const vm = this.#entered
    // The prelude at build time runs outside any run: ours, and bounded.
    if (vm === undefined) return
    const run = this.current
    if (run === undefined || run.vm !== vm || run.over || vm.dead) throw new BudgetStop('the run was ended')
    if (this.stop !== undefined && Atomics.load(this.stop, STOP_SLOT) === run.id) {
      // The host settled it already (abort, wall ceiling): nothing more is reported.
      run.over = true
      vm.dead = true
      throw new BudgetStop('the run was ended')
    }
    const now = epochNow()
    if (now === run.lastCheck) run.steps += STEPS_PER_CHECK
    run.lastCheck = now
    if (run.busyMs + (now - this.#enteredAt) >= run.computeMs || run.steps >= run.computeMs * STEPS_PER_MS) {
      // Settled here, before the throw: it unwinds whatever wasm frames are live (C, the
      // interpreter) to the host call that entered the wasm, which cannot tell it from another error.
      const message = `compute budget of ${run.computeMs} ms exhausted`
      this.#fail(run, 'timeout', message)
      throw new BudgetStop(message)
    }
  }

  /** A clock or randomness reading of the entered interpreter: journaled for its run. */
  read(reading: WasmReading, live: () => number): number {
    const run = this.current
    const vm = this.#entered
    if (vm === undefined || run === undefined || run.vm !== vm || vm.dead) return live()
    // The monotonic clock is the run's own: it goes on where a parked run stopped.
    return run.journal.read(reading, reading === 'ticks' ? () => Math.floor(performance.now() - vm.timeOrigin) : live)
  }

  #fail(run: CurrentRun, kind: 'exception' | 'timeout', message: string): void {
    if (run.over) return
    run.over = true
    run.vm.dead = true
    this.#post({ type: 'failed', run: run.id, kind, message })
  }

  #leave(at: number): void {
    const run = this.current
    if (run === undefined) return
    run.busyMs += epochNow() - at
    if (this.busy !== undefined) {
      this.busy[BUSY_SLOT] = run.busyMs
      this.busy[SEGMENT_SLOT] = 0
    } else this.#meter?.(0, run.busyMs)
    if (run.over) return
    if (run.vm.replaying && run.replayMs !== undefined && run.busyMs >= run.replayMs) this.#fail(run, 'timeout', replayBudgetMessage(run.replayMs))
    else if (run.busyMs >= run.computeMs) this.#post({ type: 'failed', run: run.id, kind: 'timeout', message: `compute budget of ${run.computeMs} ms exhausted` })
  }

  /** Runs one entry into Python for the current run; a crash of the interpreter ends the run. */
  inPython(vm: Interpreter, action: () => void): void {
    if (vm.dead || this.current?.vm !== vm) return
    const at = epochNow()
    if (this.busy !== undefined) this.busy[SEGMENT_SLOT] = at
    else this.#meter?.(at, this.current?.busyMs ?? 0)
    this.#entered = vm
    this.#enteredAt = at
    vm.realm?.enter()
    try {
      action()
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      const run = this.current
      if (error instanceof BudgetStop) {
        if (run !== undefined && run.vm === vm) this.#fail(run, 'timeout', message)
        vm.dead = true
        return
      }
      vm.dead = true
      const isMemory = /MemoryError|memory access out of bounds|Cannot enlarge memory/.test(message)
      this.#post({ type: 'failed', run: vm.run, kind: 'worker-exit', message: isMemory ? `out of memory: the program exceeded the ${this.#memoryMb()} MB memory of its MicroPython sandbox` : `the Python interpreter failed: ${message.slice(0, 2000)}` })
    } finally {
      vm.realm?.leave()
      this.#entered = undefined
      this.#leave(at)
    }
  }

  /** Runs a timer's callback: a 0 ms one as a microtask (its order follows from the inputs), a later one as a journaled input. */
  #fire(vm: Interpreter, id: number): void {
    const timer = vm.timers.get(id)
    if (timer === undefined) return
    vm.timers.delete(id)
    if (timer.delay === 0) vm.zeroTimers--
    else if (this.current?.vm === vm) this.current.journal.input(id)
    this.inPython(vm, timer.callback)
  }

  #armLive(vm: Interpreter, id: number, timer: VmTimer, delay: number): void {
    timer.due = performance.now() + delay
    timer.handle = setTimeout(() => this.#fire(vm, id), delay)
  }

  /** Arms timer `id` of `vm`. */
  setTimer(vm: Interpreter, id: number, timer: VmTimer): void {
    vm.timers.set(id, timer)
    if (timer.delay === 0) {
      // asyncio schedules its next step with a 0 ms timer: a platform timer would add its 1 ms floor to every call.
      vm.zeroTimers++
      queueMicrotask(() => this.#fire(vm, id))
    } else if (!vm.replaying) this.#armLive(vm, id, timer, timer.delay)
    // Replaying: the journal says when it fires; armed live at the end of the replay if it has not.
  }

  /** A screened message from the program: to the host; while replaying, a call is checked against the journal and nothing leaves. */
  output(vm: Interpreter, text: string): void {
    const run = this.current
    if (run === undefined || run.vm !== vm || run.over) return
    if (text.startsWith('{"type":"call"') || vm.replaying) {
      let message: { type?: unknown; id?: unknown; global?: unknown; name?: unknown; args?: unknown } = {}
      try {
        message = JSON.parse(text) as typeof message
      } catch {
        // Screened: it parsed there.
      }
      if (message.type === 'call') run.journal.call(pythonCallKey(message))
      else if (message.type === 'done' && vm.replaying) run.journal.divergedBy('it finished while replaying a journal that ends waiting for calls')
      if (vm.replaying || run.over) return
    }
    this.#post(text)
  }

  /** Delivers one host message to the run's interpreter (journaled), or holds it while the run replays. */
  deliver(run: CurrentRun, text: string): void {
    if (run.holding) {
      run.held.push(text)
      return
    }
    if (run.over || run.vm.dead) return
    run.journal.input(text)
    this.inPython(run.vm, () => run.vm.deliver(text))
  }

  /** Starts a run in its interpreter: live from its start text, or by replaying a parked VM's journal. */
  async start(start: RunStart): Promise<void> {
    const { vm } = start
    vm.run = start.id
    vm.timeOrigin = performance.now()
    const run: CurrentRun = {
      id: start.id,
      vm,
      busyMs: 0,
      computeMs: start.computeMs,
      replayMs: start.replay === undefined ? undefined : start.replayMs,
      journal: new PythonJournal((message) => this.#fail(run, 'exception', message), start.journal, start.replay),
      held: start.held,
      holding: start.replay !== undefined,
      over: false,
      steps: 0,
      lastCheck: 0,
    }
    this.current = run
    if (start.replay !== undefined) {
      vm.replaying = true
      await this.#replay(run, start.replay)
      return
    }
    run.journal.input(start.startText)
    this.inPython(vm, () => vm.start(start.startText))
    for (const text of start.held.splice(0)) this.deliver(run, text)
  }

  /** Resolves once the interpreter's 0 ms timers have all run (they run as microtasks, after the entry that queued them). */
  async #settled(vm: Interpreter): Promise<void> {
    while (vm.zeroTimers > 0 && !vm.dead) await Promise.resolve()
  }

  /** Replays one journal input (the first is the start text); false when the replay cannot go on. */
  #replayInput(run: CurrentRun, index: number, entry: string | number): boolean {
    const { vm } = run
    if (index === 0 && typeof entry === 'string') this.inPython(vm, () => vm.start(entry))
    else if (typeof entry === 'string') this.inPython(vm, () => vm.deliver(entry))
    else {
      const timer = vm.timers.get(entry)
      if (timer === undefined || timer.delay === 0) {
        run.journal.divergedBy(`the journal fires timer ${entry}, which the program had not armed`)
        return false
      }
      vm.timers.delete(entry)
      this.inPython(vm, timer.callback)
    }
    return true
  }

  /** Replays a parked run's journal in its fresh interpreter, then goes on live (armed timers, held deliveries). */
  async #replay(run: CurrentRun, parked: ParkedVm): Promise<void> {
    const { vm, journal } = run
    const live = () => !run.over && !vm.dead && this.current === run
    const inputs = parked.journal.inputs
    for (let i = 0; i < inputs.length && live(); i++) {
      if (!this.#replayInput(run, i, inputs[i]!)) return
      await this.#settled(vm)
    }
    if (!live()) return
    vm.replaying = false
    if (!journal.endReplay()) return
    vm.timeOrigin = performance.now() - parked.clockMs
    const left = new Map(parked.timers)
    for (const [id, timer] of vm.timers) {
      if (timer.delay > 0) this.#armLive(vm, id, timer, Math.max(0, left.get(id) ?? timer.delay))
    }
    this.#post({ type: 'replayed', run: run.id, busyMs: run.busyMs })
    run.holding = false
    for (const text of run.held.splice(0)) this.deliver(run, text)
  }

  /** Parks the current run if it is idle: nothing queued, no timer due within `afterMs`, its journal whole and within `maxChars`. */
  park(id: number, afterMs: number, maxChars: number): void {
    const run = this.current
    if (run === undefined || run.id !== id) return
    const { vm } = run
    const journal = run.over || vm.dead || run.holding || vm.zeroTimers > 0 ? undefined : run.journal.parkable(maxChars)
    const at = performance.now()
    const timers: (readonly [number, number])[] = []
    let due = journal === undefined
    for (const [timerId, timer] of vm.timers) {
      if (timer.due === undefined || timer.due - at < afterMs) due = true
      else timers.push([timerId, timer.due - at])
    }
    if (due || journal === undefined) {
      this.#post({ type: 'park-refused', run: id })
      return
    }
    // Released as at `end`, which the host sends next.
    run.over = true
    this.release(vm)
    this.#post({ type: 'parked', run: id, parked: { journal, clockMs: at - vm.timeOrigin, timers } })
  }

  /** Stops `vm` for good: no entry, no timer. */
  release(vm: Interpreter): void {
    vm.dead = true
    for (const timer of vm.timers.values()) clearTimeout(timer.handle)
    vm.timers.clear()
  }
}
