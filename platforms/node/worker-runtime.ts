/**
 * The Node `worker_threads` code runtime, for trusted code: one fresh Worker per run (the next
 * spawned ahead, waiting at the bootstrap with no program state; never reused), `env: {}`,
 * `resourceLimits` (held under process heap flags: _capped-worker.ts), captured stdio.
 * @module
 */
import { setMaxListeners } from 'node:events'
import { MessageChannel, type Worker } from 'node:worker_threads'
import type { CodeLogSource } from '../../src/code-runtime/contract.js'
import type { CodeRunSession } from '../../src/code-runtime/host-session.js'
import { integerOption } from '../../src/code-runtime/limits.js'
import type { RunSlot } from '../../src/code-runtime/run-lifecycle.js'
import { createTrustedRuntime, readTrustedOptions, SlotDeath, type TrustedRuntime, type TrustedRuntimeOptions } from '../../src/code-runtime/trusted-runtime.js'
import { parseWorkerMessage } from '../../src/code-runtime/wire.js'
import { toErrorData } from '../../src/errors.js'
import { spawnCappedWorker } from './_capped-worker.js'
import { portEndpoint } from './_port-endpoint.js'
import { WORKER_SOURCE } from './_worker-source.js'

/** Options of {@link createNodeWorkerRuntime}; every field is validated, absent fields take the defaults. */
export interface NodeWorkerRuntimeOptions extends TrustedRuntimeOptions {
  /** The worker's old-generation heap cap (`resourceLimits`), in MB. ArrayBuffers are not counted. Default 512. */
  readonly maxOldGenerationSizeMb?: number
  /** The worker's young-generation heap cap, in MB. Default: Node's. */
  readonly maxYoungGenerationSizeMb?: number
  /** The worker's stack size, in MB. Default 4 (Node's). */
  readonly stackSizeMb?: number
}

/** The Node worker-thread runtime: a {@link CodeRuntime} plus a warm-up hook. */
export type NodeWorkerRuntime = TrustedRuntime<'worker-thread'>

const FACTORY = 'createNodeWorkerRuntime'
type ResourceLimits = { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb?: number; stackSizeMb: number }

class WorkerSlot extends SlotDeath implements RunSlot {
  readonly worker: Worker
  readonly endpoint: RunSlot['endpoint']
  /** Resolves with the slot once its worker has booted (or died: its run then ends as a worker-exit). */
  readonly booted: Promise<WorkerSlot>
  #session: CodeRunSession | undefined
  readonly #partial: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' }

  constructor(limits: ResourceLimits, readonly maxLine: number) {
    super()
    this.worker = spawnCappedWorker(WORKER_SOURCE, { eval: true, env: {}, argv: [], execArgv: [], stdin: false, stdout: true, stderr: true, resourceLimits: limits, name: 'toolyard-code-run', trackUnmanagedFds: true })
    const { port1, port2 } = new MessageChannel()
    // The private port goes first, before any program exists; the host never listens to the parent port.
    this.worker.postMessage({ port: port2 }, [port2])
    this.endpoint = portEndpoint(port1)
    this.booted = new Promise((booted) => {
      const onReady = (data: unknown) => {
        const parsed = parseWorkerMessage(data)
        if (!parsed.ok || parsed.message.type !== 'ready') return
        port1.off('message', onReady)
        // Booting keeps the process alive (someone may await `warm()`); a booted idle worker does not.
        if (this.#session === undefined) (this.worker.unref(), port1.unref())
        booted(this)
      }
      port1.on('message', onReady)
      this.onDeath(() => booted(this))
    })
    // A message the host cannot deserialize might have been `done` or a call the program awaits: end the run now.
    port1.on('messageerror', (error) => this.#session?.fail('exception', `a message from the worker could not be read (${toErrorData(error).message})`))
    this.worker.stdout.setEncoding('utf8')
    this.worker.stderr.setEncoding('utf8')
    let lastError: unknown
    this.worker.on('error', (error) => {
      lastError = error
      const data = toErrorData(error)
      if (data.code === 'ERR_WORKER_OUT_OF_MEMORY') this.#session?.fail('worker-exit', `the worker ran out of memory (maxOldGenerationSizeMb: ${limits.maxOldGenerationSizeMb})`)
      else this.#session?.fail('exception', `Uncaught ${data.name}: ${data.message}`)
    })
    this.worker.once('exit', (code) => {
      port1.close()
      this.die(`exit code ${code}${lastError === undefined ? '' : `: ${toErrorData(lastError).message}`}`)
    })
  }

  readonly meter = () => this.worker.performance.eventLoopUtilization().active

  attach(session: CodeRunSession): void {
    this.#session = session
    // Every concurrent binding call receives the run's one signal: no "possible EventTarget memory leak" warning.
    setMaxListeners(0, session.signal)
    this.worker.ref()
    // Flowing stdio holds a ref of its own, so it starts only with a run (earlier output waits in the paused stream).
    for (const source of ['stdout', 'stderr'] as const) this.worker[source].on('data', (chunk: string) => this.#stdio(source, chunk))
  }

  /** Pushes buffered partial stdio lines into the session (at settlement). */
  collect(): void {
    for (const source of ['stdout', 'stderr'] as const) {
      const rest = this.#partial[source]
      this.#partial[source] = ''
      if (rest !== '') this.#session?.log({ source, text: rest })
    }
  }

  terminate(): void {
    if (this.reason === undefined) this.worker.terminate().catch(() => undefined)
  }

  #stdio(source: Extract<CodeLogSource, 'stdout' | 'stderr'>, chunk: string): void {
    const session = this.#session
    if (session === undefined || session.settled) return
    const lines = (this.#partial[source] + chunk).split('\n')
    let rest = lines.pop()!
    for (const text of lines) session.log({ source, text })
    if (rest.length > this.maxLine) (session.log({ source, text: rest }), (rest = ''))
    this.#partial[source] = rest
  }
}

/**
 * Creates the Node `worker_threads` code runtime. Options are validated
 * (`ToolError('INVALID_OPTIONS')`); defaults are the RFC's: `computeMs` 60 000, `maxWallMs` 600
 * 000, `maxLogBytes` 65 536, `maxValueBytes` 32 768, `maxPendingArgBytes` 32 MiB,
 * `maxOldGenerationSizeMb` 512.
 * @example
 * ```ts
 * const runtime = createNodeWorkerRuntime({ computeMs: 10_000 })
 * const result = await runtime.run({ program: 'const n: number = await tools.add({ a: 1, b: 2 }); return n * 2', bindings: [{ global: 'tools', functions: { add: async (args) => (args as { a: number; b: number }).a + (args as { a: number; b: number }).b } }] })
 * // result.value === 6
 * ```
 */
export function createNodeWorkerRuntime(options?: NodeWorkerRuntimeOptions): NodeWorkerRuntime {
  const { record, limits, prespawn } = readTrustedOptions(options, ['maxOldGenerationSizeMb', 'maxYoungGenerationSizeMb', 'stackSizeMb'], FACTORY)
  const young = record.maxYoungGenerationSizeMb === undefined ? undefined : integerOption(record, 'maxYoungGenerationSizeMb', 0, 1, 65_536, FACTORY)
  const resourceLimits: ResourceLimits = {
    maxOldGenerationSizeMb: integerOption(record, 'maxOldGenerationSizeMb', 512, 8, 65_536, FACTORY),
    ...(young === undefined ? {} : { maxYoungGenerationSizeMb: young }),
    stackSizeMb: integerOption(record, 'stackSizeMb', 4, 1, 1_024, FACTORY),
  }
  return createTrustedRuntime({
    isolation: 'worker-thread',
    capabilities: Object.freeze({ streamsLogs: true, memoryLimit: true, capturesStdio: true }),
    limits,
    prespawn,
    // async: a Worker that cannot be created rejects the run's slot (a worker-exit), never throws out of run().
    spawn: async () => new WorkerSlot(resourceLimits, limits.maxLogBytes).booted,
    alive: (slot) => slot.reason === undefined,
    defer: (task) => setImmediate(task),
  })
}
