/**
 * The browser `CodeRuntime`: every run in a fresh module Web Worker.
 *
 * Two channels reach a worker. comlink speaks the trusted host → worker control API
 * (a one-shot `attach` that doubles as the handshake) over the worker's own message
 * channel, and only before any program code exists; the host then releases the proxy
 * and never listens there again, because a program can post to that channel at will.
 * Everything the program can reach travels over a private `MessagePort` handed to the
 * shared bootstrap (src/code-runtime/bootstrap.ts), driven host-side by the shared
 * session (src/code-runtime/host-session.ts), which treats the worker as a hostile peer.
 * A third, private port carries the heartbeat that meters compute (heartbeat-meter.ts).
 *
 * TypeScript is stripped on the page's thread with the shared stripper before any worker
 * is touched: this runtime is for trusted code, and the stripper's work bound keeps that
 * to milliseconds for programs of a few KiB and 1 to 2 s at worst at the 256 KiB cap (the
 * sandbox runtime strips in its worker instead). The next worker is spawned and attached ahead of time (never reused), so a
 * run only posts its program.
 *
 * @module
 */
import * as Comlink from 'comlink'
import type { CodeRunResult, CodeRuntime, CodeRuntimeCapabilities, CodeRunRequest } from '../../src/code-runtime/contract.js'
import { CodeRunSession, failedResult, prepareRun } from '../../src/code-runtime/host-session.js'
import { CODE_RUN_LIMIT_KEYS, checkOptionsObject, integerOption, readCodeRunLimits } from '../../src/code-runtime/limits.js'
import type { CodeRunLimits } from '../../src/code-runtime/limits.js'
import { stripTypeScript } from '../../src/code-runtime/strip.js'
import { ToolError } from '../../src/errors.js'
import type { WorkerControl } from './control.js'
import { HeartbeatMeter } from './heartbeat-meter.js'

const FACTORY = 'createBrowserWorkerRuntime'

/** Options of {@link createBrowserWorkerRuntime}; validated at creation (`INVALID_OPTIONS`). */
export interface BrowserWorkerRuntimeOptions {
  /** Measured busy time a run may use, in ms (heartbeat meter). Default 60,000. */
  readonly computeMs?: number
  /** Wall-clock ceiling of a run, in ms, never paused. Default 600,000. */
  readonly maxWallMs?: number
  /** UTF-8 bytes of log text kept per run; the line that crosses it ends with an in-band mark. Default 65,536. */
  readonly maxLogBytes?: number
  /** Serialized bytes of the returned value; a larger value becomes its text rendering, cut, with a mark. Default 32,768. */
  readonly maxValueBytes?: number
  /**
   * Bytes of binding-call arguments a run may hold on the host at once (calls queued or
   * running; each weighs its JSON text plus 64 bytes per JSON value), released as calls
   * settle; a call past it is refused inside the program (its promise rejects, naming
   * `maxPendingArgBytes`), and the run goes on. 1 024 to 2^30. Default 33 554 432 (32 MiB).
   */
  readonly maxPendingArgBytes?: number
  /**
   * The worker script: `platforms/browser/worker-entry.ts`, bundled on its own. Default
   * `new URL('./worker-entry.js', import.meta.url)` — right under Vite (which maps it to the
   * `.ts` source), for the compiled package, and for a bundle that writes the worker
   * entry as `worker-entry.js` next to the page's script (scripts/build-demo.mjs does).
   */
  readonly workerUrl?: string | URL
  /** Fresh, attached workers kept ready for the next runs (never reused; 0 disables pre-spawning). Default 1. */
  readonly prespawn?: number
  /** Mean heartbeat interval in ms (each gap jittered to 0.5–1.5×). Default 10. */
  readonly heartbeatMs?: number
  /** Time a fresh worker may take to load and attach, in ms (counted before the run's own budgets). Default 10,000. */
  readonly spawnTimeoutMs?: number
}

/** The browser Web Worker runtime: a {@link CodeRuntime} plus a warm-up hook. */
export interface BrowserWorkerRuntime extends CodeRuntime {
  readonly language: 'typescript'
  readonly isolation: 'web-worker'
  /** The validated limits runs use. */
  readonly limits: CodeRunLimits
  /** Resolves once the pre-spawned workers have loaded and attached (benchmarks, pages at start-up). */
  warm(): Promise<void>
}

/**
 * A ping answered later than this is a busy sample. Well above message latency (~0.1 ms)
 * and above the scheduling delays a starved machine adds to an idle worker (measured
 * here: a few ms at a load average of 25 on 2 cores, which a 2 ms threshold mistook for
 * compute). Internal on purpose: nothing a deployment could tune into a bypass.
 */
const BUSY_THRESHOLD_MS = 5

/** A run's outcome, with the session whose binding calls `dispose()` waits for. */
interface Settled {
  readonly result: CodeRunResult
  readonly session?: CodeRunSession
}

interface Armed {
  readonly worker: Worker
  readonly wire: MessagePort
  readonly heartbeat: MessagePort
  /** The first death reported (error event, self-close notice), if any. */
  death(): string | undefined
  /** Subscribes to death; called at once when already dead. */
  onDeath(listener: (reason: string) => void): void
  /** Terminates the worker and closes the host ends. Idempotent. */
  kill(): void
}

function defaultWorkerUrl(): URL {
  return new URL('./worker-entry.js', import.meta.url)
}

function deathError(reason: string): Error {
  return new Error(reason)
}

/**
 * Spawns a fresh worker and attaches its private ports. Rejects (after killing the
 * worker) when the worker dies, errors, or takes longer than `timeoutMs`: comlink
 * leaves a call to a dead worker pending forever, so every call here races death.
 */
async function arm(url: string | URL, timeoutMs: number): Promise<Armed> {
  const worker = new Worker(url, { type: 'module', name: 'toolyard-code-run' })
  const wire = new MessageChannel()
  const heartbeat = new MessageChannel()
  let died: string | undefined
  let killed = false
  const listeners = new Set<(reason: string) => void>()
  const die = (reason: string): void => {
    if (died !== undefined) return
    died = reason
    for (const listener of [...listeners]) listener(reason)
    listeners.clear()
  }
  worker.addEventListener('error', (event: ErrorEvent) => {
    event.preventDefault()
    die(`the worker failed: ${event.message !== '' && event.message !== undefined ? event.message : 'its script did not load or threw at start-up'}`)
  })
  const kill = (): void => {
    if (killed) return
    killed = true
    worker.terminate()
    wire.port1.close()
    heartbeat.port1.close()
    die('the worker was terminated')
  }
  const armed: Armed = {
    worker,
    wire: wire.port1,
    heartbeat: heartbeat.port1,
    death: () => died,
    onDeath: (listener) => {
      if (died !== undefined) listener(died)
      else listeners.add(listener)
    },
    kill,
  }

  // comlink listens through this endpoint so the host can detach for good once attached.
  const hostListeners = new Set<EventListenerOrEventListenerObject>()
  const endpoint: Comlink.Endpoint = {
    postMessage: (message: unknown, transfer?: Transferable[]) => worker.postMessage(message, transfer ?? []),
    addEventListener: (type: string, listener: EventListenerOrEventListenerObject) => {
      hostListeners.add(listener)
      worker.addEventListener(type, listener)
    },
    removeEventListener: (type: string, listener: EventListenerOrEventListenerObject) => {
      hostListeners.delete(listener)
      worker.removeEventListener(type, listener)
    },
  }
  const control = Comlink.wrap<WorkerControl>(endpoint)
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const dead = new Promise<never>((_, reject) => armed.onDeath((reason) => reject(deathError(reason))))
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(deathError(`the worker did not start within ${timeoutMs} ms`)), timeoutMs)
    })
    const attached = control.attach(Comlink.transfer({ wire: wire.port2, heartbeat: heartbeat.port2 }, [wire.port2, heartbeat.port2]))
    const answer = await Promise.race([attached, dead, late])
    if (answer !== 'attached') throw deathError('the worker answered the handshake wrongly')
  } catch (error) {
    kill()
    throw error
  } finally {
    clearTimeout(timer)
  }
  // From here on the host never reads the worker's own channel: a program can post there.
  // The worker drops its comlink listener on release; the host drops every listener now.
  void control[Comlink.releaseProxy]()
  for (const listener of hostListeners) worker.removeEventListener('message', listener)
  hostListeners.clear()
  return armed
}

/**
 * Creates the browser Web Worker `CodeRuntime` (`language: 'typescript'`,
 * `isolation: 'web-worker'`).
 *
 * Guarantees: a fresh worker per run, terminated at every settlement; the worker is a
 * hostile peer (validated messages, host-owned accounts, one settlement); compute is
 * metered by a heartbeat a program cannot answer while it keeps its loop busy, whether
 * or not a binding call is in flight; the wall ceiling; log and value caps with in-band
 * marks; `dispose()` aborts every run and resolves once no worker, timer or binding call
 * is left. Not guaranteed: a memory cap — a page cannot limit a worker's heap
 * (`capabilities.memoryLimit` is false); Chromium keeps a terminated hot loop's thread
 * burning CPU for about two seconds after `terminate()`, although the run has settled.
 *
 * @example
 * ```ts
 * import { createBrowserWorkerRuntime } from 'toolyard/browser'
 * const codeRuntime = createBrowserWorkerRuntime({ computeMs: 5_000, maxWallMs: 30_000 })
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime })
 * ```
 */
export function createBrowserWorkerRuntime(options?: BrowserWorkerRuntimeOptions): BrowserWorkerRuntime {
  const record = checkOptionsObject(
    options,
    [...CODE_RUN_LIMIT_KEYS, 'workerUrl', 'prespawn', 'heartbeatMs', 'spawnTimeoutMs'],
    FACTORY,
  )
  const limits: CodeRunLimits = readCodeRunLimits(record, FACTORY)
  const heartbeatMs = integerOption(record, 'heartbeatMs', 10, 1, 1_000, FACTORY)
  const spawnTimeoutMs = integerOption(record, 'spawnTimeoutMs', 10_000, 1, 600_000, FACTORY)
  const prespawn = integerOption(record, 'prespawn', 1, 0, 16, FACTORY)
  const workerUrl = record.workerUrl ?? defaultWorkerUrl()
  if (typeof workerUrl !== 'string' && !(workerUrl instanceof URL)) {
    throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.workerUrl must be a string or a URL`)
  }
  if (typeof Worker !== 'function' || typeof MessageChannel !== 'function') {
    throw new ToolError('INVALID_OPTIONS', `${FACTORY}: this environment has no Web Worker support`)
  }

  const spawning = new Set<Promise<unknown>>()
  const spares: Promise<Armed>[] = []
  let refillTimer: ReturnType<typeof setTimeout> | undefined
  let disposed = false

  const spawn = (): Promise<Armed> => {
    const pending = arm(workerUrl, spawnTimeoutMs).then((armed) => {
      // Started after dispose(): nobody will run it.
      if (disposed) armed.kill()
      return armed
    })
    const tracked = pending.then(
      () => undefined,
      () => undefined,
    )
    spawning.add(tracked)
    void tracked.finally(() => spawning.delete(tracked))
    return pending
  }

  const refill = (): void => {
    while (!disposed && spares.length < prespawn) {
      const next = spawn()
      next.then(
        (armed) => {
          // A spare that died while waiting is dropped; it is never handed to a run.
          armed.onDeath(() => {
            const at = spares.indexOf(next)
            if (at !== -1) spares.splice(at, 1)
          })
        },
        () => {
          const at = spares.indexOf(next)
          if (at !== -1) spares.splice(at, 1)
        },
      )
      spares.push(next)
    }
  }

  const takeWorker = (): Promise<Armed> => {
    const taken = spares.shift()
    // Spawning is a few ms of host work: start the replacement after this run's program is out.
    if (refillTimer === undefined && prespawn > 0) {
      refillTimer = setTimeout(() => {
        refillTimer = undefined
        refill()
      }, 0)
    }
    if (taken === undefined) return spawn()
    return taken.then(
      (armed) => (armed.death() === undefined ? armed : spawn()),
      () => spawn(),
    )
  }

  /** One run, to settlement; `controller` is how `dispose()` aborts it at any stage. */
  const execute = async (request: CodeRunRequest, controller: AbortController): Promise<Settled> => {
    const outer = (request as { signal?: unknown } | null | undefined)?.signal
    const prepared = prepareRun(
      typeof request === 'object' && request !== null
        ? { ...request, signal: outer instanceof AbortSignal ? AbortSignal.any([outer, controller.signal]) : outer === undefined ? controller.signal : outer }
        : request,
    )
    if (!prepared.ok) return { result: failedResult('exception', prepared.message) }
    // An aborted signal wins over a syntax error, as on every other runtime.
    const signal = prepared.run.signal!
    if (signal.aborted) return { result: failedResult('abort', abortText(signal)) }
    const stripped = stripTypeScript(prepared.run.program)
    if (!stripped.ok) return { result: failedResult('exception', stripped.message) }
    const syntax = v8SyntaxError(stripped.code)
    if (syntax !== undefined) return { result: failedResult('exception', syntax) }

    let armed: Armed
    try {
      armed = await raceAbort(takeWorker(), signal)
    } catch (error) {
      if (signal.aborted) return { result: failedResult('abort', abortText(signal)) }
      return { result: failedResult('worker-exit', error instanceof Error ? error.message : 'the worker could not be started') }
    }
    const gone = armed.death()
    if (gone !== undefined) return { result: failedResult(signal.aborted ? 'abort' : 'worker-exit', signal.aborted ? abortText(signal) : gone) }

    let meter: HeartbeatMeter | undefined
    const session: CodeRunSession = new CodeRunSession(prepared.run, stripped.code, limits, {
      endpoint: armed.wire,
      meter: () => meter?.computeMs() ?? 0,
      terminate: () => {
        meter?.stop()
        armed.kill()
      },
    })
    meter = new HeartbeatMeter(armed.heartbeat, {
      intervalMs: heartbeatMs,
      busyThresholdMs: BUSY_THRESHOLD_MS,
      onExit: () => session.fail('worker-exit', 'the worker closed itself (self.close())'),
    })
    armed.onDeath((reason) => {
      if (!session.settled) session.fail('worker-exit', reason)
    })
    meter.start()
    session.start()
    return { result: await session.result, session }
  }

  const inflight = new Set<{ readonly controller: AbortController; readonly done: Promise<{ session?: CodeRunSession }> }>()

  const run = async (request: CodeRunRequest): Promise<CodeRunResult> => {
    if (disposed) return failedResult('abort', 'the code runtime was disposed')
    const controller = new AbortController()
    // run() never rejects: a request whose properties throw when read is an exception result.
    const done: Promise<Settled> = execute(request, controller).catch((error: unknown) => ({
      result: failedResult('exception', `TypeError: the request could not be read (${error instanceof Error ? error.message : String(error)})`),
    }))
    const entry = { controller, done }
    inflight.add(entry)
    try {
      return (await done).result
    } finally {
      inflight.delete(entry)
    }
  }

  refill()

  return Object.freeze({
    language: 'typescript' as const,
    isolation: 'web-worker' as const,
    capabilities: Object.freeze<CodeRuntimeCapabilities>({ streamsLogs: true, memoryLimit: false, capturesStdio: false }),
    limits,
    run,
    async warm(): Promise<void> {
      refill()
      await Promise.all(spares.map((spare) => spare.then(() => undefined, () => undefined)))
    },
    async dispose(): Promise<void> {
      disposed = true
      clearTimeout(refillTimer)
      refillTimer = undefined
      const entries = [...inflight]
      for (const entry of entries) entry.controller.abort(new DOMException('the code runtime was disposed', 'AbortError'))
      const leftovers = spares.splice(0)
      await Promise.all([
        ...entries.map(async (entry) => {
          const { session } = await entry.done
          await session?.bindingsSettled()
        }),
        ...leftovers.map((spare) =>
          spare.then(
            (armed) => armed.kill(),
            () => undefined,
          ),
        ),
        ...spawning,
      ])
    },
  })
}

function abortText(signal: AbortSignal): string {
  const reason: unknown = signal.reason
  const detail = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : ''
  return detail === '' ? 'the run was aborted' : `the run was aborted (${detail})`
}

/** Resolves with `promise`, or rejects when `signal` fires first (the promise's worker is then killed when it arrives). */
function raceAbort(promise: Promise<Armed>, signal: AbortSignal): Promise<Armed> {
  return new Promise<Armed>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason)
      promise.then(
        (armed) => armed.kill(),
        () => undefined,
      )
    }
    if (signal.aborted) {
      onAbort()
      return
    }
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (armed) => {
        signal.removeEventListener('abort', onAbort)
        resolve(armed)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as new (body: string) => unknown

/**
 * The message of the `SyntaxError` compiling `body` as an AsyncFunction body throws;
 * `undefined` when it compiles; `null` when it cannot be compiled here for another reason
 * (a page whose Content-Security-Policy forbids `unsafe-eval`). Compiles, never runs: the
 * Function constructor parses the body on its own, so a body cannot close the function
 * early and reach code outside it.
 */
function compileError(body: string): string | undefined | null {
  try {
    new AsyncFunction(body)
    return undefined
  } catch (error) {
    return error instanceof SyntaxError ? error.message : null
  }
}

/**
 * A syntax error V8 finds in a program the stripper accepted (`const a` declared twice,
 * `await` in a plain function), with the model's line and column; `undefined` when it
 * parses (or cannot be compiled on this page: the worker then reports it, as before).
 * Chromium reports an AsyncFunction body's syntax error without any position, and a page
 * has no compile-only script API with one (Node's worker runtime uses `node:vm`), so the
 * position is found by bisection: the first line whose prefix of the program fails with
 * the same message, then the first character of that line, then back to the start of the
 * word there (or to the `await` the message names). At most ~2 log2(size) compiles, only
 * for a program that fails to compile; a program that compiles costs one compile.
 */
function v8SyntaxError(program: string): string | undefined {
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
