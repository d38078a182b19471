/**
 * The browser `CodeRuntime` for trusted code: every run in a fresh module Web Worker.
 * @module
 */
import * as Comlink from 'comlink'
import type { CodeRunSession } from '../../src/code-runtime/host-session.js'
import { integerOption } from '../../src/code-runtime/limits.js'
import { yieldHostTurnsWith } from '../../src/code-runtime/sliced-delivery.js'
import type { RunSlot } from '../../src/code-runtime/run-lifecycle.js'
import { createTrustedRuntime, readTrustedOptions, SlotDeath, type TrustedRuntime, type TrustedRuntimeOptions } from '../../src/code-runtime/trusted-runtime.js'
import { ToolError } from '../../src/errors.js'
import type { WorkerControl } from './control.js'
import { HeartbeatMeter } from './heartbeat-meter.js'
import { channelTurn } from './next-turn.js'

const FACTORY = 'createBrowserWorkerRuntime'

/** Options of {@link createBrowserWorkerRuntime}; validated at creation (`INVALID_OPTIONS`). */
export interface BrowserWorkerRuntimeOptions extends TrustedRuntimeOptions {
  /**
   * The worker script: `platforms/browser/worker-entry.ts`, bundled on its own. Default
   * `new URL('./worker-entry.js', import.meta.url)` — right under Vite (which maps it to the
   * `.ts` source), for the compiled package, and for a bundle that writes the worker entry
   * as `worker-entry.js` next to the page's script (scripts/build-demo.mjs does).
   */
  readonly workerUrl?: string | URL
  /** Mean heartbeat interval in ms (each gap jittered to 0.5–1.5×). Default 10. */
  readonly heartbeatMs?: number
  /** Time a fresh worker may take to load and attach, in ms (counted before the run's own budgets). Default 10,000. */
  readonly spawnTimeoutMs?: number
}

/** The browser Web Worker runtime: a {@link CodeRuntime} plus a warm-up hook. */
export type BrowserWorkerRuntime = TrustedRuntime<'web-worker'>

const BUSY_THRESHOLD_MS = 5

type Armed = RunSlot & { readonly death: SlotDeath }

async function arm(url: string | URL, timeoutMs: number, heartbeatMs: number): Promise<Armed> {
  const worker = new Worker(url, { type: 'module', name: 'toolyard-code-run' })
  const wire = new MessageChannel()
  const heartbeat = new MessageChannel()
  const death = new SlotDeath()
  worker.addEventListener('error', (event: ErrorEvent) => {
    event.preventDefault()
    death.die(`it failed: ${event.message ? event.message : 'its script did not load or threw at start-up'}`)
  })
  let meter: HeartbeatMeter | undefined
  const terminate = (): void => {
    meter?.stop()
    worker.terminate()
    wire.port1.close()
    heartbeat.port1.close()
    death.die('it was terminated')
  }
  const armed: Armed = {
    endpoint: wire.port1,
    death,
    meter: () => meter?.computeMs() ?? 0,
    terminate,
    onDeath: (listener) => death.onDeath(listener),
    attach: (_session: CodeRunSession) => {
      meter = new HeartbeatMeter(heartbeat.port1, { intervalMs: heartbeatMs, busyThresholdMs: BUSY_THRESHOLD_MS, onExit: () => death.die('it closed itself (self.close())') })
      meter.start()
    },
  }
  // comlink listens through this endpoint so the host can detach for good once attached.
  const listeners = new Set<EventListenerOrEventListenerObject>()
  const control = Comlink.wrap<WorkerControl>({
    postMessage: (message: unknown, transfer?: Transferable[]) => worker.postMessage(message, transfer ?? []),
    addEventListener: (type: string, listener: EventListenerOrEventListenerObject) => (listeners.add(listener), worker.addEventListener(type, listener)),
    removeEventListener: (type: string, listener: EventListenerOrEventListenerObject) => (listeners.delete(listener), worker.removeEventListener(type, listener)),
  })
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const dead = new Promise<never>((_, reject) => death.onDeath((reason) => reject(new Error(reason))))
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`it did not start within ${timeoutMs} ms`)), timeoutMs)))
    const attached = control.attach(Comlink.transfer({ wire: wire.port2, heartbeat: heartbeat.port2 }, [wire.port2, heartbeat.port2]))
    if ((await Promise.race([attached, dead, late])) !== 'attached') throw new Error('it answered the handshake wrongly')
  } catch (error) {
    terminate()
    throw error
  } finally {
    clearTimeout(timer)
  }
  // From here on the host never reads the worker's own channel: a program can post there.
  void control[Comlink.releaseProxy]()
  for (const listener of listeners) worker.removeEventListener('message', listener)
  listeners.clear()
  return armed
}

/**
 * Creates the browser Web Worker `CodeRuntime` (`language: 'typescript'`, `isolation:
 * 'web-worker'`).
 * @example
 * ```ts
 * import { createBrowserWorkerRuntime } from 'toolyard/browser'
 * const codeRuntime = createBrowserWorkerRuntime({ computeMs: 5_000, maxWallMs: 30_000 })
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime })
 * ```
 */
export function createBrowserWorkerRuntime(options?: BrowserWorkerRuntimeOptions): BrowserWorkerRuntime {
  const { record, limits, prespawn } = readTrustedOptions(options, ['workerUrl', 'heartbeatMs', 'spawnTimeoutMs'], FACTORY)
  const heartbeatMs = integerOption(record, 'heartbeatMs', 10, 1, 1_000, FACTORY)
  const spawnTimeoutMs = integerOption(record, 'spawnTimeoutMs', 10_000, 1, 600_000, FACTORY)
  const workerUrl = record.workerUrl ?? new URL('./worker-entry.js', import.meta.url)
  if (typeof workerUrl !== 'string' && !(workerUrl instanceof URL)) throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.workerUrl must be a string or a URL`)
  if (typeof Worker !== 'function' || typeof MessageChannel !== 'function') throw new ToolError('INVALID_OPTIONS', `${FACTORY}: this environment has no Web Worker support`)
  yieldHostTurnsWith(channelTurn)
  return createTrustedRuntime({
    isolation: 'web-worker',
    capabilities: Object.freeze({ streamsLogs: true, memoryLimit: false, capturesStdio: false }),
    limits,
    prespawn,
    spawn: () => arm(workerUrl, spawnTimeoutMs, heartbeatMs),
    alive: (armed) => armed.death.reason === undefined,
    defer: channelTurn,
  })
}
