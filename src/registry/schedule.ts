/**
 * How a batch scheduler (`runToolCalls`) takes turns inside the pipeline, so that only dispatch and
 * body overlap while policy phases and tails keep model order.
 * @module
 */

/**
 * The phases of one call, in order: `policy` (input checks, resolution, the
 * `tools/pre-execute` gate, guards, approval), `dispatch` (the `tools/execute` wrappers
 * and the body) and `tail` (output, `tools/post-execute`, `finalizeContent`,
 * `tools/result`).
 */
export type PipelinePhase = 'policy' | 'dispatch' | 'tail'

/** A batch scheduler's one entry into an execution. */
export interface PipelineSchedule {
  /** Runs `run` (this call's `phase`) when the batch allows, and settles once it settled. */
  phase(phase: PipelinePhase, run: () => Promise<void>): Promise<void>
}

/** A `dispatch` turn that went wrong: it never ran the body (`started: false`, the call was abandoned), or it failed after starting it. */
export interface DispatchBreak {
  readonly started: boolean
  /** What the scheduler rejected with (`undefined` when it settled without running the body). */
  readonly error: unknown
}

/** What the pipeline runs as one phase: `undefined` when it finished synchronously. */
export type PhaseRun = () => Promise<undefined> | undefined

const noop = (): void => {}

/** Normalizes an optional schedule: each phase reaches it at most once, and whatever it does, the call goes on. */
export class Schedule {
  readonly #inner: PipelineSchedule | undefined
  /** The phases handed to the inner schedule so far. */
  readonly #taken = new Set<PipelinePhase>()

  constructor(inner: PipelineSchedule | undefined) {
    this.#inner = inner
  }

  /** Runs `run` as this call's `phase`. */
  phase(phase: PipelinePhase, run: PhaseRun): Promise<DispatchBreak | undefined> | undefined {
    const inner = this.#inner
    // A phase reaches the inner schedule once: a second hand-over would take (and release) a second turn.
    if (inner === undefined || this.#taken.has(phase)) return run()
    this.#taken.add(phase)
    return turn(inner, phase, run)
  }

  /**
   * Hands the inner schedule, with nothing to run, the `policy` and `tail` turns this
   * call never took (only a call the pipeline failed to drive has any), so the batch's
   * later calls do not wait for them forever.
   */
  settle(): void {
    const inner = this.#inner
    // Stryker disable next-line ConditionalExpression: without it each turn's inner.phase throws a TypeError that turn() catches (the phase's run is a no-op)
    if (inner === undefined) return
    for (const phase of ['policy', 'tail'] as const) {
      if (this.#taken.has(phase)) continue
      this.#taken.add(phase)
      turn(inner, phase, () => undefined).then(noop, noop)
    }
  }
}

/** One turn of `inner`: `run` starts at most once, whoever calls it (the scheduler, or this function when the scheduler broke). */
async function turn(inner: PipelineSchedule, phase: PipelinePhase, run: PhaseRun): Promise<DispatchBreak | undefined> {
  let ran: Promise<undefined> | undefined
  const once = (): Promise<undefined> => {
    if (ran === undefined) {
      try {
        ran = Promise.resolve(run())
      } catch (error) {
        ran = Promise.reject(error)
      }
    }
    return ran
  }
  let broke = false
  let error: unknown
  try {
    await inner.phase(phase, () => once().then(noop))
  } catch (caught) {
    broke = true
    error = caught
  }
  if (phase !== 'dispatch') {
    // A broken scheduler must not break the call; it only loses ordering.
    await once()
    return undefined
  }
  if (ran === undefined) return { started: false, error }
  // The body settles before the call goes on, whatever the scheduler said (quiescence).
  await ran
  return broke ? { started: true, error } : undefined
}

/** The schedule of a plain `execute()`: it holds no inner schedule, so it keeps no state and sharing it is safe. */
export const UNSCHEDULED = new Schedule(undefined)
