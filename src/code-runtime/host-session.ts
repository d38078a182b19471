/**
 * The host side of one Code Mode run, shared by every message-passing runtime: the state machine
 * that owns every account.
 * @module
 */
import type {
  CodeBindingCallOptions,
  CodeBindingFunction,
  CodeLogEntry,
  CodeRunFailure,
  CodeRunFailureKind,
  CodeRunRequest,
  CodeRunResult,
  ParkedRunState,
  ParkedVm,
} from './contract.js'
import { isParkedRunState, journalHoldsCall } from './journal.js'
import { ToolCallError, toErrorData } from '../errors.js'
import { DEFAULT_MAX_PENDING_ARG_BYTES } from './limits.js'
import type { CodeRunLimits } from './limits.js'
import { deepValueText, MAX_VALUE_DEPTH, measureValueBytes, renderedWithin, utf8Length, utf8Prefix } from './render.js'
import { nestsDeeperThan } from '../json/nesting.js'
import { invalidGlobalName, parseWorkerMessage, PROGRAM_SOURCE_URL } from './wire.js'
import { invalidLane } from './run-lanes.js'
import type { HostMessage, WireEndpoint, WireErrorData, WireListener, WireMessageEvent, WireNamespace } from './wire.js'

/** How often the busy-time meter is read. Internal on purpose: nothing a deployment could mis-tune into a bypass. */
export const METER_POLL_MS = 10

/** Binding calls one run may have unsettled at once. */
export const MAX_INFLIGHT_CALLS = 50_000

/** A request checked and snapshotted at `run()` time (host mutations later change nothing). */
export interface PreparedRun {
  readonly program: string
  readonly namespaces: readonly WireNamespace[]
  readonly functions: ReadonlyMap<string, ReadonlyMap<string, CodeBindingFunction>>
  readonly signal: AbortSignal | undefined
  readonly onLog: ((entry: CodeLogEntry) => void) | undefined
  /** `request.durable.onPark`, checked. */
  readonly onPark: ((state: ParkedRunState) => void) | undefined
  /** `request.durable.resume`, checked: the run starts parked, from this state. */
  readonly resume: ParkedRunState | undefined
  /** `request.lane`, checked: the queue the run waits in for a slot (absent: the shared one). */
  readonly lane: string | undefined
}

/** What a platform supplies to a session. */
export interface HostSessionPlatform {
  /** The host end of the private channel to the sandbox. */
  readonly endpoint: WireEndpoint
  /**
   * The sandbox's measured busy time in ms since any fixed origin (worker event-loop utilisation,
   * …).
   */
  readonly meter?: () => number
  /** Ends the sandbox. Called exactly once, at settlement, before `result` resolves. */
  terminate(): void
  /** Called at settlement before logs freeze: push any buffered platform output (partial stdout lines). */
  collect?(): void
  /**
   * Asks the sandbox to park the run (docs/durability.md): called when every unsettled call has
   * waited for a person for {@link HostSessionPlatform.parkAfterMs}.
   */
  park?(): void
  /** How long the run waits only for people before it asks to park. Default 1 000 ms. */
  readonly parkAfterMs?: number
  /**
   * True while other runs wait for this run's slot: a run that waits only for people then
   * parks at once instead of after `parkAfterMs` (kept for an idle server, where a quick
   * decision saves a replay). Absent: always `parkAfterMs`.
   */
  parkNow?(): boolean
}

/** The default of {@link HostSessionPlatform.parkAfterMs}. */
export const DEFAULT_PARK_AFTER_MS = 1_000

/** Builds a failed result without running anything. */
export function failedResult(kind: CodeRunFailureKind, message: string, logs: readonly CodeLogEntry[] = []): CodeRunResult {
  return Object.freeze({ logs: Object.freeze([...logs]), error: Object.freeze({ kind, message }), stats: Object.freeze({ wallMs: 0, computeMs: 0 }) })
}

/**
 * Checks a `run()` request and snapshots its bindings. Returns a message (for an
 * `exception` result) when the request is malformed: `run()` never throws.
 */
export function prepareRun(request: unknown): { readonly ok: true; readonly run: PreparedRun } | { readonly ok: false; readonly message: string } {
  if (typeof request !== 'object' || request === null) return { ok: false, message: 'TypeError: run() needs a request object' }
  const r = request as Partial<CodeRunRequest>
  if (typeof r.program !== 'string') return { ok: false, message: 'TypeError: request.program must be a string' }
  if (r.signal !== undefined && !(r.signal instanceof AbortSignal)) return { ok: false, message: 'TypeError: request.signal must be an AbortSignal' }
  if (r.onLog !== undefined && typeof r.onLog !== 'function') return { ok: false, message: 'TypeError: request.onLog must be a function' }
  const badLane = invalidLane(r.lane)
  if (badLane !== undefined) return { ok: false, message: badLane }
  const durable = r.durable as { onPark?: unknown; resume?: unknown } | undefined
  if (durable !== undefined && (typeof durable !== 'object' || durable === null)) return { ok: false, message: 'TypeError: request.durable must be an object' }
  if (durable?.onPark !== undefined && typeof durable.onPark !== 'function') return { ok: false, message: 'TypeError: request.durable.onPark must be a function' }
  if (durable?.resume !== undefined && !isParkedRunState(durable.resume)) return { ok: false, message: 'TypeError: request.durable.resume is not the state of a parked run' }
  const bindings: unknown = r.bindings ?? []
  if (!Array.isArray(bindings)) return { ok: false, message: 'TypeError: request.bindings must be an array' }
  const functions = new Map<string, Map<string, CodeBindingFunction>>()
  const namespaces: WireNamespace[] = []
  for (const ns of bindings as unknown[]) {
    const global = (ns as { global?: unknown } | null)?.global
    const invalid = invalidGlobalName(global)
    if (invalid !== undefined) return { ok: false, message: `TypeError: ${invalid}` }
    if (functions.has(global as string)) return { ok: false, message: `TypeError: binding global "${String(global)}" appears twice` }
    const fns = (ns as { functions?: unknown }).functions
    if (typeof fns !== 'object' || fns === null) return { ok: false, message: `TypeError: bindings "${String(global)}".functions must be an object` }
    const table = new Map<string, CodeBindingFunction>()
    for (const name of Object.keys(fns)) {
      const fn = Object.getOwnPropertyDescriptor(fns, name)?.value as unknown
      if (typeof fn === 'function') table.set(name, fn as CodeBindingFunction)
    }
    functions.set(global as string, table)
    const variadic = (ns as { variadic?: unknown }).variadic === true
    namespaces.push({ global: global as string, names: [...table.keys()], ...(variadic ? { variadic } : {}) })
  }
  return {
    ok: true,
    run: {
      program: r.program,
      namespaces,
      functions,
      signal: r.signal,
      onLog: r.onLog,
      onPark: durable?.onPark as PreparedRun['onPark'],
      resume: durable?.resume as ParkedRunState | undefined,
      lane: r.lane,
    },
  }
}

function now(): number {
  return globalThis.performance.now()
}

/** How a Python traceback names a frame of the program (its line already mapped to the program's own). */
const PYTHON_PROGRAM_FRAME = 'File "program.py", line '

/** Formats a program error for the model: `Name: message` plus up to five program frames (TypeScript's or Python's). */
export function formatProgramError(error: WireErrorData): string {
  const head = error.name === '' ? error.message : error.message === '' ? error.name : `${error.name}: ${error.message}`
  // Stryker disable next-line StringLiteral: without a stack any text without a program frame gives no frames
  const lines = (error.stack ?? '').split('\n').map((line) => line.trim())
  const ts = lines.filter((line) => line.includes(`${PROGRAM_SOURCE_URL}:`)).slice(0, 5)
  // A Python traceback lists the innermost frame last: keep the last five.
  const frames = (ts.length > 0 ? ts : lines.filter((line) => line.startsWith(PYTHON_PROGRAM_FRAME)).slice(-5)).map((line) => `    ${line}`)
  return frames.length > 0 ? `${head}\n${frames.join('\n')}` : head
}

/** The message of a run its caller's signal aborted: the reason's text, when there is one. */
export function abortMessage(signal: AbortSignal): string {
  const reason: unknown = signal.reason
  const detail = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : ''
  return detail === '' ? 'the run was aborted' : `the run was aborted (${detail})`
}

/** One run's host-side state machine. */
export class CodeRunSession {
  /** Resolves once, at settlement. Never rejects. */
  readonly result: Promise<CodeRunResult>
  /** Fires at settlement (any reason) or when the request's signal aborts; passed to every binding call. */
  readonly signal: AbortSignal

  readonly #run: PreparedRun
  readonly #program: string
  readonly #limits: CodeRunLimits
  readonly #platform: HostSessionPlatform
  readonly #controller = new AbortController()
  readonly #logs: CodeLogEntry[] = []
  readonly #inflight = new Map<number, Promise<void>>()
  /** What each unsettled call is (by the program's call number): a parked run's state lists them. */
  readonly #calls = new Map<number, { readonly global: string; readonly name: string; readonly args: unknown }>()
  /** Argument bytes the calls in {@link CodeRunSession.#inflight} hold (`maxPendingArgBytes`). */
  #pendingArgBytes = 0
  #resolve!: (result: CodeRunResult) => void
  #settled = false
  #started = false
  #logBytes = 0
  #logTruncated = false
  #lastCallId = 0
  #startedAt = 0
  #meterBase = 0
  #busyMs = 0
  #wallTimer: ReturnType<typeof setTimeout> | undefined
  /** Open wall-clock holds, when the first of them began, and the held time so far. */
  #holds = 0
  #heldSince = 0
  #heldMs = 0
  #meterTimer: ReturnType<typeof setInterval> | undefined
  /** Parking: the timer that asks for it, whether an ask is out, whether the VM is parked now. */
  #parkTimer: ReturnType<typeof setTimeout> | undefined
  #parkAsked = false
  #isParked = false
  readonly #onMessage: WireListener
  readonly #onAbort: () => void
  /** Every call's `holdWallClock` (one function for the run, not one per call). */
  readonly #holdWallClock = (): (() => void) => this.holdWallClock()

  constructor(run: PreparedRun, strippedProgram: string, limits: CodeRunLimits, platform: HostSessionPlatform) {
    this.#run = run
    this.#program = strippedProgram
    this.#limits = limits
    this.#platform = platform
    this.signal = this.#controller.signal
    this.result = new Promise((resolve) => {
      this.#resolve = resolve
    })
    this.#onMessage = (event) => this.#receive(event)
    this.#onAbort = () => this.fail('abort', abortMessage(run.signal!))
  }

  /** True once the run has an outcome. */
  get settled(): boolean {
    return this.#settled
  }

  /** True while the run's VM is parked (released; the run waits for a person at the cost of its journal). */
  get isParked(): boolean {
    return this.#isParked
  }

  /**
   * The platform parked the VM (`true`: the meter stops, nothing runs until a message for
   * the VM resumes it) or resumed it (`false`: the meter runs again).
   */
  parked(on: boolean): void {
    this.#parkAsked = false
    this.#isParked = on
    if (this.#settled) return
    if (on) {
      if (this.#meterTimer !== undefined) clearInterval(this.#meterTimer)
      this.#meterTimer = undefined
    } else {
      this.#startMeter()
      this.#considerParking()
    }
  }

  /** The platform could not park the VM now (a timer is due, work is queued): try again later. */
  parkRefused(): void {
    this.#parkAsked = false
    this.#considerParking()
  }

  /** The run's whole state with its VM parked as `vm`: what `request.durable.onPark` receives. `replayMs`: compute its resumes have replayed so far. */
  snapshot(vm: ParkedVm, replayMs = 0): ParkedRunState {
    return {
      version: 1,
      vm,
      logs: [...this.#logs],
      logBytes: this.#logBytes,
      logTruncated: this.#logTruncated,
      busyMs: this.#busyMs,
      wallMs: this.wallElapsedMs(),
      lastCallId: this.#lastCallId,
      calls: [...this.#calls].map(([id, call]) => ({ id, ...call })),
      ...(replayMs > 0 ? { replayMs } : {}),
    }
  }

  /**
   * Starts a run from a parked state (instead of {@link CodeRunSession.start}): the logs
   * and the compute and wall time charged so far carry over, the VM stays parked, and
   * the calls it waited on are made again. The next message for the VM resumes it.
   */
  startParked(state: ParkedRunState): void {
    if (this.#started) return
    this.#started = true
    this.#startedAt = now() - state.wallMs
    this.#busyMs = state.busyMs
    this.#lastCallId = state.lastCallId
    this.#logs.push(...state.logs.map((entry) => Object.freeze({ ...entry })))
    this.#logBytes = state.logBytes
    this.#logTruncated = state.logTruncated
    this.#isParked = true
    const signal = this.#run.signal
    if (signal?.aborted) {
      this.fail('abort', abortMessage(signal))
      return
    }
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once, and settling removes the listener
    signal?.addEventListener('abort', this.#onAbort, { once: true })
    this.#platform.endpoint.addEventListener('message', this.#onMessage)
    this.#platform.endpoint.start?.()
    this.#armWallTimer()
    // A waiting call is made again only as the VM made it: a stored state is data from outside.
    const edited = state.calls.find((call) => !journalHoldsCall(state.vm.journal, call))
    if (edited !== undefined) {
      this.fail('exception', `REPLAY_DIVERGED: the waiting call ${edited.id} (${edited.global}.${edited.name}) is not the call the run's journal recorded; it was not made again`)
      return
    }
    for (const call of state.calls) this.#dispatch(call.id, call.global, call.name, call.args, undefined)
  }

  /** Only people are awaited: calls are unsettled and every one of them holds the wall clock for a decision. */
  #waitsOnlyForPeople(): boolean {
    return this.#inflight.size > 0 && this.#holds >= this.#inflight.size
  }

  /** (Re)arms or clears the park timer as the run's waits change. */
  #considerParking(): void {
    if (this.#platform.park === undefined) return
    const wanted = !this.#settled && !this.#isParked && !this.#parkAsked && this.#waitsOnlyForPeople()
    if (!wanted) {
      if (this.#parkTimer !== undefined) clearTimeout(this.#parkTimer)
      this.#parkTimer = undefined
      return
    }
    if (this.#parkTimer !== undefined) return
    if (this.#platform.parkNow?.() === true) {
      this.#parkAsked = true
      this.#platform.park()
      return
    }
    this.#parkTimer = setTimeout(() => {
      this.#parkTimer = undefined
      if (this.#settled || this.#isParked || this.#parkAsked || !this.#waitsOnlyForPeople()) return
      this.#parkAsked = true
      this.#platform.park!()
    }, this.#platform.parkAfterMs ?? DEFAULT_PARK_AFTER_MS)
  }

  #startMeter(): void {
    const meter = this.#platform.meter
    if (meter === undefined || this.#meterTimer !== undefined) return
    this.#meterTimer = setInterval(() => this.#checkCompute(), Math.min(METER_POLL_MS, this.#limits.computeMs))
  }

  /** Others now wait for this run's slot: a run waiting only for people parks at once rather than when its timer fires. */
  slotWanted(): void {
    if (this.#parkTimer === undefined) return
    clearTimeout(this.#parkTimer)
    this.#parkTimer = undefined
    this.#considerParking()
  }

  /** Starts the budgets and sends the program. Settles at once when the request's signal has already fired. */
  start(): void {
    if (this.#started) return
    this.#started = true
    this.#startedAt = now()
    const signal = this.#run.signal
    if (signal?.aborted) {
      this.fail('abort', abortMessage(signal))
      return
    }
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once, and settling removes the listener
    signal?.addEventListener('abort', this.#onAbort, { once: true })
    const { endpoint, meter } = this.#platform
    endpoint.addEventListener('message', this.#onMessage)
    endpoint.start?.()
    this.#armWallTimer()
    if (meter !== undefined) {
      this.#meterBase = meter()
      this.#startMeter()
    }
    const start: HostMessage = {
      type: 'start',
      program: this.#program,
      namespaces: this.#run.namespaces,
      maxLogBytes: this.#limits.maxLogBytes,
      maxValueBytes: this.#limits.maxValueBytes,
    }
    try {
      endpoint.postMessage(start)
    } catch (error) {
      this.fail('worker-exit', `the program could not be sent to the sandbox: ${toErrorData(error).message}`)
    }
  }

  /** Adds one platform-captured log line (stdout/stderr), subject to the log cap. */
  log(entry: CodeLogEntry): void {
    this.#addLog(entry)
  }

  /** Ends the run with a failure (platform events: worker exit, OOM, uncaught error, abort). First outcome wins. */
  fail(kind: CodeRunFailureKind, message: string): void {
    this.#settle(undefined, { kind, message })
  }

  /** Wall-clock ms charged to the run so far: elapsed time minus the time it was held. */
  wallElapsedMs(): number {
    if (!this.#started) return 0
    const holding = this.#holds > 0 ? now() - this.#heldSince : 0
    return now() - this.#startedAt - this.#heldMs - holding
  }

  /**
   * Holds the wall clock until the returned release is called (nested holds: it runs again when the
   * last one is released).
   */
  holdWallClock(): () => void {
    if (this.#settled) return () => undefined
    if (this.#holds++ === 0) {
      this.#heldSince = now()
      if (this.#wallTimer !== undefined) clearTimeout(this.#wallTimer)
      this.#wallTimer = undefined
    }
    this.#considerParking()
    let released = false
    return () => {
      if (released) return
      released = true
      const last = --this.#holds === 0
      this.#considerParking()
      if (!last) return
      this.#heldMs += now() - this.#heldSince
      if (!this.#settled && this.#started) this.#armWallTimer()
    }
  }

  #armWallTimer(): void {
    const remaining = this.#limits.maxWallMs - this.wallElapsedMs()
    // Timers may fire a fraction of a millisecond early on the monotonic clock: the ceiling
    // is reached when the clock says so, never before (re-armed for the rest).
    this.#wallTimer = setTimeout(() => {
      if (this.wallElapsedMs() < this.#limits.maxWallMs) this.#armWallTimer()
      else this.fail('timeout', `wall-clock ceiling of ${this.#limits.maxWallMs} ms reached`)
    }, Math.max(0, Math.ceil(remaining)))
  }

  /** Resolves once every binding call this run started has settled (their signal fired at settlement). */
  async bindingsSettled(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.all([...this.#inflight.values()])
  }

  #checkCompute(): void {
    if (this.#settled || this.#platform.meter === undefined) return
    let reading: number
    try {
      reading = this.#platform.meter()
    } catch {
      // A meter that cannot be read this time (its thread just ended) skips one poll; the wall ceiling still holds.
      return
    }
    this.#busyMs = Math.max(this.#busyMs, reading - this.#meterBase)
    if (this.#busyMs >= this.#limits.computeMs) this.fail('timeout', `compute budget of ${this.#limits.computeMs} ms exhausted`)
  }

  /**
   * Bytes the run keeps on the host besides its VM's journal: its unsettled calls' arguments
   * (weighed as for `maxPendingArgBytes`) and its log lines.
   */
  heldBytes(): number {
    return this.#pendingArgBytes + this.#logBytes
  }

  /** Calls started and not yet settled, and the argument bytes they hold: for tests and load figures. */
  pendingCalls(): { readonly calls: number; readonly argBytes: number } {
    return { calls: this.#inflight.size, argBytes: this.#pendingArgBytes }
  }

  #receive(event: WireMessageEvent): void {
    if (this.#settled) return
    const parsed = parseWorkerMessage(event.data)
    if (!parsed.ok) return
    const message = parsed.message
    switch (message.type) {
      case 'ready':
        return
      case 'log':
        this.#addLog({ source: 'console', level: message.level, text: message.text })
        return
      case 'call':
        this.#call(message.id, message.global, message.name, message.args, event.checkedArgBytes)
        return
      case 'done':
        if ('error' in message) this.#settle(undefined, { kind: 'exception', message: formatProgramError(message.error) })
        else if (message.oversized === true) {
          // The sandbox measured the value over the cap and sent its rendering: mark it as
          // the host would have (the claim is not trusted for anything else).
          this.#settle({ value: message.value }, undefined, true)
        } else {
          if (message.rendered === true) {
            this.#addLog({
              source: 'console',
              level: 'warn',
              text: '[toolyard] the returned value is not structured-cloneable; it was replaced by its text rendering',
            })
          }
          this.#settle({ value: message.value }, undefined)
        }
    }
  }

  #reply(message: HostMessage): void {
    if (this.#settled) return
    try {
      this.#platform.endpoint.postMessage(message)
    } catch (error) {
      if (message.type !== 'reply' || !message.ok) return
      const why = toErrorData(error).message
      this.#reply({ type: 'reply', id: message.id, ok: false, message: `the binding's result cannot be sent to the program (${why})` })
    }
  }

  /** What a call's arguments weigh against `maxPendingArgBytes`, or a refusal. */
  #argWeight(args: unknown, checked: number | undefined): number | string {
    if (checked !== undefined) return checked
    // The bootstrap refuses these inside the program; a worker that sends them anyway is refused here.
    if (nestsDeeperThan(args, MAX_VALUE_DEPTH)) return `the arguments nest deeper than ${MAX_VALUE_DEPTH} levels; flatten them`
    return args === undefined ? 0 : measureValueBytes(args, this.#argBudget() - this.#pendingArgBytes)
  }

  #argBudget(): number {
    return this.#limits.maxPendingArgBytes ?? DEFAULT_MAX_PENDING_ARG_BYTES
  }

  #call(id: number, global: string, name: string, args: unknown, checkedArgBytes: number | undefined): void {
    // Ids increase strictly: a replayed or duplicate id is dropped, never dispatched twice.
    if (id <= this.#lastCallId) return
    this.#lastCallId = id
    this.#dispatch(id, global, name, args, checkedArgBytes)
  }

  #dispatch(id: number, global: string, name: string, args: unknown, checkedArgBytes: number | undefined): void {
    if (this.#inflight.size >= MAX_INFLIGHT_CALLS) {
      this.fail(
        'exception',
        `the program had more than ${MAX_INFLIGHT_CALLS} binding calls in flight at once; await calls (or batch them) instead of starting them all`,
      )
      return
    }
    const fn = this.#run.functions.get(global)?.get(name)
    if (fn === undefined) {
      this.#reply({ type: 'reply', id, ok: false, message: `unknown binding ${global}[${JSON.stringify(name)}]` })
      return
    }
    const weight = this.#argWeight(args, checkedArgBytes)
    if (typeof weight === 'string') {
      this.#reply({ type: 'reply', id, ok: false, message: weight })
      return
    }
    const budget = this.#argBudget()
    if (this.#pendingArgBytes + weight > budget) {
      // Refused, not queued: the program sees a rejected call and may await earlier ones and retry.
      this.#reply({
        type: 'reply',
        id,
        ok: false,
        message:
          `${global}.${name}: refused: the run's unsettled binding calls would hold more than maxPendingArgBytes ` +
          `(${budget} bytes) of arguments (earlier calls hold ${this.#pendingArgBytes}; this one at least ${weight}); await earlier calls before starting more`,
      })
      return
    }
    this.#pendingArgBytes += weight
    const options: CodeBindingCallOptions = {
      signal: this.signal,
      deadline: Date.now() + Math.max(0, this.#limits.maxWallMs - this.wallElapsedMs()),
      holdWallClock: this.#holdWallClock,
      callNumber: id,
    }
    this.#calls.set(id, { global, name, args })
    // A method, not closures per call: the call releases its accounts in its own `finally`
    // (at once when the binding threw synchronously: then it is not in flight any more).
    const task = this.#runCall(id, fn, args, options, weight)
    if (this.#calls.has(id)) this.#inflight.set(id, task)
    this.#considerParking()
  }

  /** Runs one accepted call, replies, then releases what it held (its slot, its argument bytes). */
  async #runCall(id: number, fn: CodeBindingFunction, args: unknown, options: CodeBindingCallOptions, weight: number): Promise<void> {
    try {
      const value = await fn(args, options)
      this.#reply({ type: 'reply', id, ok: true, value })
    } catch (error) {
      const data = toErrorData(error)
      const toolName = error instanceof ToolCallError ? error.toolName : undefined
      const code = error instanceof ToolCallError ? error.code : undefined
      this.#reply({ type: 'reply', id, ok: false, message: data.message, ...(toolName === undefined ? {} : { toolName }), ...(code === undefined ? {} : { code }) })
    } finally {
      this.#inflight.delete(id)
      this.#calls.delete(id)
      this.#pendingArgBytes -= weight
      this.#considerParking()
    }
  }

  #addLog(entry: CodeLogEntry): void {
    if (this.#settled || this.#logTruncated) return
    const max = this.#limits.maxLogBytes
    const room = max - this.#logBytes
    // Stryker disable next-line ConditionalExpression,EqualityOperator,MethodExpression: the cut only bounds the measuring work
    const cost = entry.text.length + 1 > room ? utf8Length(entry.text.slice(0, room + 1)) + 1 : utf8Length(entry.text) + 1
    let accepted: CodeLogEntry
    if (cost <= room) {
      this.#logBytes += cost
      accepted = Object.freeze({ ...entry })
    } else {
      this.#logTruncated = true
      const head = utf8Prefix(entry.text, Math.max(0, room - 1))
      accepted = Object.freeze({ ...entry, text: `${head}… [log truncated: maxLogBytes of ${max} bytes reached]` })
      this.#logBytes = max
    }
    this.#logs.push(accepted)
    const onLog = this.#run.onLog
    // Stryker disable next-line ConditionalExpression: calling an absent listener throws inside the try below
    if (onLog !== undefined) {
      try {
        onLog(accepted)
      } catch {
        // A throwing listener is ignored (contract).
      }
    }
  }

  #cappedValue(value: unknown, oversized: boolean): unknown {
    const max = this.#limits.maxValueBytes
    const fits = !oversized && measureValueBytes(value, max) <= max
    if (fits) return nestsDeeperThan(value, MAX_VALUE_DEPTH) ? deepValueText(value, max) : value
    if (oversized && typeof value === 'string') return `${utf8Prefix(value, max)}… [value truncated: larger than maxValueBytes of ${max} bytes]`
    return `${renderedWithin(value, max)}… [value truncated: larger than maxValueBytes of ${max} bytes]`
  }

  #settle(outcome: { readonly value: unknown } | undefined, error: CodeRunFailure | undefined, oversized = false): void {
    if (this.#settled) return
    // Collect platform output first, while the log is still open.
    try {
      // Stryker disable next-line OptionalChaining: an absent collect throws inside this try, which ignores it
      this.#platform.collect?.()
    } catch {
      // Platform collection is best effort.
    }
    this.#settled = true
    if (this.#wallTimer !== undefined) clearTimeout(this.#wallTimer)
    if (this.#meterTimer !== undefined) clearInterval(this.#meterTimer)
    if (this.#parkTimer !== undefined) clearTimeout(this.#parkTimer)
    if (this.#started) this.#checkBusyForStats()
    this.#run.signal?.removeEventListener('abort', this.#onAbort)
    this.#platform.endpoint.removeEventListener('message', this.#onMessage)
    this.#controller.abort()
    try {
      this.#platform.terminate()
    } catch {
      // Termination failures surface as the platform's exit events; the outcome stands.
    }
    const value = outcome === undefined || outcome.value === undefined ? undefined : this.#cappedValue(outcome.value, oversized)
    const result: CodeRunResult = {
      ...(value === undefined ? {} : { value }),
      logs: Object.freeze([...this.#logs]),
      ...(error === undefined ? {} : { error: Object.freeze({ ...error }) }),
      stats: Object.freeze({ wallMs: this.#started ? now() - this.#startedAt : 0, computeMs: this.#busyMs }),
    }
    this.#resolve(Object.freeze(result))
  }

  #checkBusyForStats(): void {
    if (this.#platform.meter === undefined) return
    try {
      this.#busyMs = Math.max(this.#busyMs, this.#platform.meter() - this.#meterBase)
    } catch {
      // The sandbox may already be gone.
    }
  }
}
