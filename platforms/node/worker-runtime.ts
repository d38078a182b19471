/**
 * The Node `worker_threads` code runtime: one fresh Worker per run (the next one is
 * spawned ahead of time and waits at the bootstrap with no program state; a worker is
 * never reused), `env: {}`, `resourceLimits`, captured stdout/stderr, the private-port
 * wire protocol and the shared host session (budgets, caps, single settlement).
 *
 * @module
 */
import { setMaxListeners } from 'node:events'
import { Script } from 'node:vm'
import { MessageChannel, Worker } from 'node:worker_threads'
import type { MessagePort } from 'node:worker_threads'
import type { CodeLogSource, CodeRunRequest, CodeRunResult, CodeRuntime, CodeRuntimeCapabilities } from '../../src/code-runtime/contract.js'
import { CodeRunSession, failedResult, prepareRun } from '../../src/code-runtime/host-session.js'
import { checkOptionsObject, CODE_RUN_LIMIT_KEYS, integerOption, readCodeRunLimits } from '../../src/code-runtime/limits.js'
import type { CodeRunLimits } from '../../src/code-runtime/limits.js'
import { stripTypeScript } from '../../src/code-runtime/strip.js'
import { parseWorkerMessage } from '../../src/code-runtime/wire.js'
import type { WireEndpoint } from '../../src/code-runtime/wire.js'
import { toErrorData } from '../../src/errors.js'
import { portEndpoint } from './_port-endpoint.js'
import { WORKER_SOURCE } from './_worker-source.js'

/** Options of {@link createNodeWorkerRuntime}; every field is validated, absent fields take the defaults. */
export interface NodeWorkerRuntimeOptions {
  /** Measured busy time (worker event-loop utilisation) a run may use, in ms. Default 60 000. */
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
  /** The worker's old-generation heap cap (`resourceLimits`), in MB. ArrayBuffers are not counted. Default 512. */
  readonly maxOldGenerationSizeMb?: number
  /** The worker's young-generation heap cap, in MB. Default: Node's. */
  readonly maxYoungGenerationSizeMb?: number
  /** The worker's stack size, in MB. Default 4 (Node's). */
  readonly stackSizeMb?: number
  /** Fresh workers kept booted ahead of runs (0 disables pre-spawning). Default 1. */
  readonly prespawn?: number
}

/** The Node worker-thread runtime: a {@link CodeRuntime} plus a warm-up hook. */
export interface NodeWorkerRuntime extends CodeRuntime {
  readonly language: 'typescript'
  readonly isolation: 'worker-thread'
  /** The validated limits runs use. */
  readonly limits: CodeRunLimits
  /** Resolves once the pre-spawned fresh workers have booted to the bootstrap (benchmarks, servers at start-up). */
  warm(): Promise<void>
}

const FACTORY = 'createNodeWorkerRuntime'
const KNOWN_OPTIONS = [...CODE_RUN_LIMIT_KEYS, 'maxOldGenerationSizeMb', 'maxYoungGenerationSizeMb', 'stackSizeMb', 'prespawn']

interface ResolvedOptions {
  readonly limits: CodeRunLimits
  readonly resourceLimits: { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb?: number; stackSizeMb: number }
  readonly prespawn: number
}

function resolveOptions(options: unknown): ResolvedOptions {
  const record = checkOptionsObject(options, KNOWN_OPTIONS, FACTORY)
  const limits = readCodeRunLimits(record, FACTORY)
  const young = record.maxYoungGenerationSizeMb === undefined ? undefined : integerOption(record, 'maxYoungGenerationSizeMb', 0, 1, 65_536, FACTORY)
  return {
    limits,
    resourceLimits: {
      maxOldGenerationSizeMb: integerOption(record, 'maxOldGenerationSizeMb', 512, 8, 65_536, FACTORY),
      ...(young === undefined ? {} : { maxYoungGenerationSizeMb: young }),
      stackSizeMb: integerOption(record, 'stackSizeMb', 4, 1, 1_024, FACTORY),
    },
    prespawn: integerOption(record, 'prespawn', 1, 0, 16, FACTORY),
  }
}

/** One worker, from spawn to exit. Used for exactly one run. */
class WorkerSlot {
  readonly worker: Worker
  readonly endpoint: WireEndpoint
  readonly exited: Promise<void>
  readonly booted: Promise<void>
  isBooted = false
  isDead = false
  session: CodeRunSession | undefined
  readonly #port: MessagePort
  readonly #maxLineLength: number
  readonly #partial: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' }
  #lastError: unknown

  constructor(resolved: ResolvedOptions, onExit: (slot: WorkerSlot) => void) {
    this.#maxLineLength = resolved.limits.maxLogBytes
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      env: {},
      argv: [],
      execArgv: [],
      stdin: false,
      stdout: true,
      stderr: true,
      resourceLimits: resolved.resourceLimits,
      name: 'toolyard-code-run',
      trackUnmanagedFds: true,
    })
    const { port1, port2 } = new MessageChannel()
    this.#port = port1
    // The private port goes first, before any program exists; the host never listens to the parent port.
    this.worker.postMessage({ port: port2 }, [port2])
    this.endpoint = portEndpoint(port1)
    let markBooted!: () => void
    this.booted = new Promise((resolve) => {
      markBooted = resolve
    })
    const onReady = (data: unknown) => {
      const parsed = parseWorkerMessage(data)
      if (parsed.ok && parsed.message.type === 'ready') {
        this.isBooted = true
        port1.off('message', onReady)
        // Booting keeps the process alive (someone may be awaiting `warm()`); a booted
        // idle worker does not.
        if (this.session === undefined) {
          this.worker.unref()
          port1.unref()
        }
        markBooted()
      }
    }
    port1.on('message', onReady)
    // A message the host cannot deserialize (e.g. nesting that overflows the deserializer's
    // stack) is lost: it might have been the run's `done` or a call the program awaits, so
    // the run ends now instead of at the wall-clock ceiling.
    port1.on('messageerror', (error) => {
      this.session?.fail('exception', `a message from the worker could not be read (${toErrorData(error).message})`)
    })
    this.worker.stdout.setEncoding('utf8')
    this.worker.stderr.setEncoding('utf8')
    this.worker.on('error', (error) => {
      this.#lastError = error
      const session = this.session
      if (session === undefined) return
      const data = toErrorData(error)
      if (data.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        session.fail('worker-exit', `the worker ran out of memory (maxOldGenerationSizeMb: ${resolved.resourceLimits.maxOldGenerationSizeMb})`)
      } else session.fail('exception', `Uncaught ${data.name}: ${data.message}`)
    })
    this.exited = new Promise((resolve) => {
      this.worker.once('exit', (code) => {
        this.isDead = true
        markBooted()
        port1.close()
        const session = this.session
        if (session !== undefined && !session.settled) {
          const why = this.#lastError === undefined ? '' : `: ${toErrorData(this.#lastError).message}`
          session.fail('worker-exit', `the worker exited with code ${code} before the program finished${why}`)
        }
        onExit(this)
        resolve()
      })
    })
  }

  /** Attaches the run's session; the worker now keeps the process alive until it ends. */
  assign(session: CodeRunSession): void {
    this.session = session
    this.worker.ref()
    // Flowing worker stdio holds a ref of its own, so it starts only with a run: an idle
    // pre-spawned worker (which runs no program, so writes nothing) never keeps the host
    // process alive. Anything written earlier waits in the paused stream.
    this.worker.stdout.on('data', (chunk: string) => this.#stdio('stdout', chunk))
    this.worker.stderr.on('data', (chunk: string) => this.#stdio('stderr', chunk))
  }

  /** Pushes buffered partial stdio lines into the session (called at settlement). */
  collect(): void {
    const session = this.session
    if (session === undefined) return
    for (const source of ['stdout', 'stderr'] as const) {
      const rest = this.#partial[source]
      this.#partial[source] = ''
      if (rest !== '') session.log({ source, text: rest })
    }
  }

  kill(): void {
    if (this.isDead) return
    this.worker.terminate().catch(() => undefined)
  }

  #stdio(source: Extract<CodeLogSource, 'stdout' | 'stderr'>, chunk: string): void {
    const session = this.session
    if (session === undefined || session.settled) return
    let buffer = this.#partial[source] + chunk
    let newline = buffer.indexOf('\n')
    while (newline !== -1) {
      session.log({ source, text: buffer.slice(0, newline) })
      buffer = buffer.slice(newline + 1)
      newline = buffer.indexOf('\n')
    }
    if (buffer.length > this.#maxLineLength) {
      session.log({ source, text: buffer })
      buffer = ''
    }
    this.#partial[source] = buffer
  }
}

class NodeWorkerCodeRuntime implements NodeWorkerRuntime {
  readonly language = 'typescript' as const
  readonly isolation = 'worker-thread' as const
  readonly capabilities: CodeRuntimeCapabilities = Object.freeze({ streamsLogs: true, memoryLimit: true, capturesStdio: true })
  readonly limits: CodeRunLimits
  readonly #options: ResolvedOptions
  readonly #idle: WorkerSlot[] = []
  readonly #slots = new Set<WorkerSlot>()
  readonly #sessions = new Set<CodeRunSession>()
  readonly #bindingWork = new Set<Promise<void>>()
  #disposed = false
  #refillScheduled = false

  constructor(options: ResolvedOptions) {
    this.#options = options
    this.limits = options.limits
    this.#refill()
  }

  async run(request: CodeRunRequest): Promise<CodeRunResult> {
    if (this.#disposed) return failedResult('abort', 'the code runtime was disposed')
    const prepared = prepareRun(request)
    if (!prepared.ok) return failedResult('exception', prepared.message)
    const signal = prepared.run.signal
    if (signal?.aborted) {
      const session = new CodeRunSession(prepared.run, '', this.limits, { endpoint: nullEndpoint, terminate: () => undefined })
      session.start()
      return session.result
    }
    // Host-side, for trusted code: the stripper's work bound keeps it linear (milliseconds for
    // programs of a few KiB, 1 to 2 s at worst at the 256 KiB cap); the sandbox strips in its thread.
    const stripped = stripTypeScript(prepared.run.program)
    if (!stripped.ok) return failedResult('exception', stripped.message)
    const syntax = v8SyntaxError(stripped.code)
    if (syntax !== undefined) return failedResult('exception', syntax)

    let slot: WorkerSlot
    try {
      slot = this.#take()
    } catch (error) {
      return failedResult('worker-exit', `the worker could not be started: ${toErrorData(error).message}`)
    }
    const session = new CodeRunSession(prepared.run, stripped.code, this.limits, {
      endpoint: slot.endpoint,
      meter: () => slot.worker.performance.eventLoopUtilization().active,
      terminate: () => slot.kill(),
      collect: () => slot.collect(),
    })
    // Every concurrent binding call receives this one run-scoped signal; bindings that
    // listen to it must not trip Node's "possible EventTarget memory leak" warning.
    setMaxListeners(0, session.signal)
    slot.assign(session)
    this.#sessions.add(session)
    session.start()
    if (slot.isDead) session.fail('worker-exit', 'the worker exited before the program started')
    const result = await session.result
    this.#sessions.delete(session)
    const work = session.bindingsSettled()
    this.#bindingWork.add(work)
    void work.finally(() => this.#bindingWork.delete(work))
    this.#scheduleRefill()
    return result
  }

  async warm(): Promise<void> {
    this.#refill()
    await Promise.all(this.#idle.map((slot) => slot.booted))
  }

  async dispose(): Promise<void> {
    this.#disposed = true
    for (const session of [...this.#sessions]) session.fail('abort', 'the code runtime was disposed')
    this.#idle.length = 0
    const slots = [...this.#slots]
    for (const slot of slots) slot.kill()
    await Promise.all(slots.map((slot) => slot.exited))
    while (this.#bindingWork.size > 0) await Promise.all([...this.#bindingWork])
  }

  #spawn(): WorkerSlot {
    const slot = new WorkerSlot(this.#options, (dead) => {
      this.#slots.delete(dead)
      const at = this.#idle.indexOf(dead)
      if (at !== -1) this.#idle.splice(at, 1)
    })
    this.#slots.add(slot)
    return slot
  }

  #take(): WorkerSlot {
    const booted = this.#idle.findIndex((slot) => slot.isBooted && !slot.isDead)
    const index = booted !== -1 ? booted : this.#idle.findIndex((slot) => !slot.isDead)
    if (index !== -1) return this.#idle.splice(index, 1)[0]!
    return this.#spawn()
  }

  #refill(): void {
    while (!this.#disposed && this.#idle.length < this.#options.prespawn) this.#idle.push(this.#spawn())
  }

  /** Spawning costs the host a few ms of synchronous work: do it after the settling run's reply is out. */
  #scheduleRefill(): void {
    if (this.#refillScheduled || this.#disposed) return
    this.#refillScheduled = true
    setImmediate(() => {
      this.#refillScheduled = false
      try {
        this.#refill()
      } catch {
        // A failed pre-spawn is retried on demand by the next run.
      }
    })
  }
}

/**
 * A syntax error V8 finds in a program the stripper accepted (`const a` declared twice,
 * `await` in a plain function), with the model's line and column; `undefined` when it
 * parses. V8 reports an AsyncFunction body's syntax error without any position, so the
 * same body is compiled as a script (never run) inside a wrapper on a line of its own,
 * and Node's decorated stack (`program.ts:L`, the source line, a caret) gives the
 * position. A stack of another shape leaves the error to the worker, as before.
 */
function v8SyntaxError(program: string): string | undefined {
  try {
    new Script(`(async function () {\n${program}\n})`, { filename: 'program.ts', lineOffset: -1 })
    return undefined
  } catch (error) {
    if (!(error instanceof SyntaxError) || typeof error.stack !== 'string') return undefined
    const [where, , caret] = error.stack.split('\n')
    const line = /^program\.ts:(\d+)$/.exec(where ?? '')?.[1]
    const column = caret?.indexOf('^') ?? -1
    if (line === undefined || column < 0) return undefined
    const lastLine = program.split('\n').length
    const position =
      Number(line) > lastLine
        ? `line ${lastLine}, column ${program.length - program.lastIndexOf('\n')}: at the end of the program`
        : `line ${line}, column ${column + 1}`
    return `SyntaxError: ${error.message} (${position})`
  }
}

const nullEndpoint: WireEndpoint = {
  postMessage: () => undefined,
  addEventListener: () => undefined,
  removeEventListener: () => undefined,
}

/**
 * Creates the Node `worker_threads` code runtime. Options are validated
 * (`ToolError('INVALID_OPTIONS')`); defaults are the RFC's: `computeMs` 60 000,
 * `maxWallMs` 600 000, `maxLogBytes` 65 536, `maxValueBytes` 32 768,
 * `maxPendingArgBytes` 32 MiB, `maxOldGenerationSizeMb` 512. The worker thread is containment, not a security
 * boundary: see docs/runtimes.md.
 *
 * @example
 * ```ts
 * const runtime = createNodeWorkerRuntime({ computeMs: 10_000 })
 * const result = await runtime.run({
 *   program: 'const n: number = await tools.add({ a: 1, b: 2 }); return n * 2',
 *   bindings: [{ global: 'tools', functions: { add: async (args) => (args as { a: number; b: number }).a + (args as { a: number; b: number }).b } }],
 * })
 * // result.value === 6
 * await runtime.dispose()
 * ```
 */
export function createNodeWorkerRuntime(options?: NodeWorkerRuntimeOptions): NodeWorkerRuntime {
  return new NodeWorkerCodeRuntime(resolveOptions(options))
}
