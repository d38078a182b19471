/**
 * What the trusted worker runtimes (Node `worker_threads`, browser Web Workers) share: options,
 * spare slots ({@link SparePool}), host-side stripping, and assembly from a {@link TrustedDriver}.
 * @module
 */
import type { CodeRunRequest, CodeRuntime, CodeRuntimeCapabilities } from './contract.js'
import { checkOptionsObject, CODE_RUN_LIMIT_KEYS, integerOption, readCodeRunLimits } from './limits.js'
import type { CodeRunLimits } from './limits.js'
import { RunLifecycle, startOnSlot } from './run-lifecycle.js'
import type { RunSlot } from './run-lifecycle.js'
import { stripTypeScript } from './strip.js'

/** The options every trusted worker runtime takes; validated at creation (`INVALID_OPTIONS`). */
export interface TrustedRuntimeOptions {
  /** Measured busy time a run may use, in ms. Default 60 000. */
  readonly computeMs?: number
  /** Wall-clock ceiling of a run, in ms; never pauses (a program awaiting forever ends here). Default 600 000. */
  readonly maxWallMs?: number
  /** UTF-8 bytes of log text kept per run (each line counts one extra byte); the last kept line carries a truncation mark. Default 65 536. */
  readonly maxLogBytes?: number
  /** Serialized bytes of the returned value; a larger value becomes its truncated text rendering, marked. Default 32 768. */
  readonly maxValueBytes?: number
  /**
   * Bytes of binding-call arguments a run may hold on the host at once (calls queued or
   * running; each weighs its JSON text plus 64 bytes per JSON value), released as calls
   * settle; a call past it is refused inside the program (its promise rejects, naming
   * `maxPendingArgBytes`), and the run goes on. 1 024 to 2^30. Default 33 554 432 (32 MiB).
   */
  readonly maxPendingArgBytes?: number
  /** Fresh workers kept started ahead of runs (never reused; 0 disables pre-spawning). Default 1. */
  readonly prespawn?: number
}

/**
 * Validates a trusted runtime's options (`INVALID_OPTIONS`): the shared limits and
 * `prespawn` (0 to 16, default 1), plus the platform's `extra` keys, read by the caller
 * from `record`.
 */
export function readTrustedOptions(options: unknown, extra: readonly string[], factory: string): { readonly record: Readonly<Record<string, unknown>>; readonly limits: CodeRunLimits; readonly prespawn: number } {
  const record = checkOptionsObject(options, [...CODE_RUN_LIMIT_KEYS, 'prespawn', ...extra], factory)
  return { record, limits: readCodeRunLimits(record, factory), prespawn: integerOption(record, 'prespawn', 1, 0, 16, factory) }
}

/** A trusted worker runtime: a {@link CodeRuntime} plus a warm-up hook. */
export interface TrustedRuntime<I extends string> extends CodeRuntime {
  readonly language: 'typescript'
  readonly isolation: I
  /** The validated limits runs use. */
  readonly limits: CodeRunLimits
  /** Resolves once the pre-spawned workers have started (benchmarks, servers and pages at start-up). */
  warm(): Promise<void>
}

/** What a platform supplies to {@link createTrustedRuntime}. */
export interface TrustedDriver<I extends string, S extends RunSlot> {
  readonly isolation: I
  readonly capabilities: CodeRuntimeCapabilities
  readonly limits: CodeRunLimits
  readonly prespawn: number
  /** Starts a fresh slot; resolves once it can take a program. */
  spawn(): Promise<S>
  /** Whether a spare may still be handed to a run. */
  alive(slot: S): boolean
  /** Runs `task` soon, after the current run's program is out (spawning costs the host a few ms). */
  defer(task: () => void): void
  /** A host-side compile of the stripped program: a syntax error's message with line and column. Default {@link v8SyntaxError}. */
  checkSyntax?(code: string): string | undefined
}

/** How a slot reports its death: listeners called once, with the first reason (at once when already dead). A slot class may extend it. */
export class SlotDeath {
  #reason: string | undefined
  readonly #listeners = new Set<(reason: string) => void>()

  /** The first reason given, if the slot is dead. */
  get reason(): string | undefined {
    return this.#reason
  }

  /** Calls `listener` once the slot dies (at once when it is dead already). */
  onDeath(listener: (reason: string) => void): void {
    if (this.#reason !== undefined) listener(this.#reason)
    else this.#listeners.add(listener)
  }

  /** Marks the slot dead; only the first reason counts. */
  die(reason: string): void {
    if (this.#reason !== undefined) return
    this.#reason = reason
    for (const listener of [...this.#listeners]) listener(reason)
    this.#listeners.clear()
  }
}

/** Fresh slots spawned ahead of runs (never reused): `prespawn` spares, refilled after each take. */
export class SparePool<S extends RunSlot> {
  readonly #spares: Promise<S>[] = []
  readonly #spawning = new Set<Promise<unknown>>()
  /** Every slot started and not dead yet: spares and the runs' own. */
  readonly #slots = new Set<S>()
  #closed = false
  #refillAsked = false

  constructor(readonly driver: Pick<TrustedDriver<string, S>, 'spawn' | 'alive' | 'defer' | 'prespawn'>) {
    this.refill()
  }

  /** Tops the spares up to `prespawn`. */
  refill(): void {
    while (!this.#closed && this.#spares.length < this.driver.prespawn) {
      const next = this.#spawn()
      const drop = (): void => {
        const at = this.#spares.indexOf(next)
        if (at !== -1) this.#spares.splice(at, 1)
      }
      // A spare that died while waiting is dropped; it is never handed to a run.
      next.then((slot) => slot.onDeath(drop), drop)
      this.#spares.push(next)
    }
  }

  /** A spare (or a fresh slot when none is alive); the replacement is spawned after this run's program is out. */
  take(): Promise<S> {
    const taken = this.#spares.shift()
    if (!this.#refillAsked && this.driver.prespawn > 0 && !this.#closed) {
      this.#refillAsked = true
      this.driver.defer(() => {
        this.#refillAsked = false
        try {
          this.refill()
        } catch {
          // A failed pre-spawn is retried on demand by the next run.
        }
      })
    }
    if (taken === undefined) return this.#spawn()
    return taken.then(
      (slot) => (this.driver.alive(slot) ? slot : this.#spawn()),
      () => this.#spawn(),
    )
  }

  /** Resolves once the spares have started (or failed to). */
  async warm(): Promise<void> {
    this.refill()
    await Promise.all(this.#spares.map((spare) => spare.then(() => undefined, () => undefined)))
  }

  /** Spawns nothing more, ends every spare, and resolves once no spawn is in flight. */
  async close(): Promise<void> {
    this.#closed = true
    const spares = this.#spares.splice(0)
    await Promise.all([...spares.map((spare) => spare.then((slot) => slot.terminate(), () => undefined)), ...this.#spawning])
  }

  /** Ends every slot still alive (runs have settled by now) and resolves once each has died. */
  async release(): Promise<void> {
    const left = [...this.#slots]
    for (const slot of left) slot.terminate()
    await Promise.all(left.map((slot) => new Promise<void>((dead) => slot.onDeath(() => dead()))))
  }

  #spawn(): Promise<S> {
    const pending = this.driver.spawn().then((slot) => {
      this.#slots.add(slot)
      slot.onDeath(() => this.#slots.delete(slot))
      // Started after close(): nobody will run it.
      if (this.#closed) slot.terminate()
      return slot
    })
    const tracked = pending.then(
      () => undefined,
      () => undefined,
    )
    this.#spawning.add(tracked)
    // Stryker disable next-line ArrowFunction: memory only: a settled spawn left in the set resolves at once when close() awaits it
    void tracked.finally(() => this.#spawning.delete(tracked))
    return pending
  }
}

/**
 * Assembles a trusted runtime: the shared lifecycle, host-side stripping (the code is
 * trusted, and the stripper's work bound keeps it to milliseconds for programs of a few
 * KiB, 1 to 2 s at worst at the 256 KiB cap; the sandbox strips in its thread instead),
 * the driver's syntax check, and a fresh slot per run from the spares.
 */
export function createTrustedRuntime<I extends string, S extends RunSlot>(driver: TrustedDriver<I, S>): TrustedRuntime<I> {
  const spares = new SparePool(driver)
  let closing: Promise<void> = Promise.resolve()
  const lifecycle = new RunLifecycle({
    strip: stripTypeScript,
    checkSyntax: (code) => (driver.checkSyntax ?? v8SyntaxError)(code),
    start: (run, program) => startOnSlot(run, program, driver.limits, () => spares.take()),
    close: () => {
      closing = spares.close()
    },
    release: async () => {
      await closing
      await spares.release()
    },
  })
  return Object.freeze({
    language: 'typescript' as const,
    isolation: driver.isolation,
    capabilities: driver.capabilities,
    limits: driver.limits,
    run: (request: CodeRunRequest) => lifecycle.run(request),
    warm: () => spares.warm(),
    dispose: () => lifecycle.dispose(),
  })
}

const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as new (body: string) => unknown

function compileError(body: string): string | undefined | null {
  try {
    new AsyncFunction(body)
    return undefined
  } catch (error) {
    return error instanceof SyntaxError ? error.message : null
  }
}

/**
 * A syntax error V8 finds in a program the stripper accepted (`const a` declared twice, `await` in
 * a plain function), with the model's line and column; `undefined` when it parses (or cannot be
 * compiled here: the worker then reports it).
 */
export function v8SyntaxError(program: string): string | undefined {
  const message = compileError(program)
  if (typeof message !== 'string') return undefined
  const lines = program.split('\n')
  if (message === 'Unexpected end of input') {
    return `SyntaxError: ${message} (line ${lines.length}, column ${lines[lines.length - 1]!.length + 1}: at the end of the program)`
  }
  const upTo = (count: number): string => lines.slice(0, count).join('\n')
  let low = 1
  let high = lines.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (compileError(upTo(middle)) === message) high = middle
    else low = middle + 1
  }
  const text = lines[low - 1]!
  // Stryker disable next-line ConditionalExpression,EqualityOperator: at line 1 the prefix would be '\n'
  const before = low > 1 ? `${upTo(low - 1)}\n` : ''
  let first = 1
  let last = text.length
  while (first < last) {
    const middle = (first + last) >> 1
    if (compileError(before + text.slice(0, middle)) === message) last = middle
    else first = middle + 1
  }
  // The error fires once its token's last character is in: report where the token starts.
  let start = Math.max(0, first - 1)
  const word = /[\w$]/
  while (start > 0 && word.test(text[start - 1]!) && word.test(text[start]!)) start--
  if (message.startsWith('await ')) {
    const keyword = text.lastIndexOf('await', start)
    if (keyword >= 0) start = keyword
  }
  return `SyntaxError: ${message} (line ${low}, column ${start + 1})`
}
