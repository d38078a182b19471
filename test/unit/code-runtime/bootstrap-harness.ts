/**
 * Runs the sandbox bootstrap (src/code-runtime/in-sandbox/bootstrap.ts) in this thread, over a real
 * `MessageChannel`, and plays the host by hand: every worker and QuickJS sandbox runs a
 * bundled copy of this module, so the source itself is only exercised here.
 *
 * The bootstrap installs `console`, `ToolCallError` and the binding namespaces on this
 * realm's `globalThis`: each run saves those globals and restores them when it settles.
 */
import { startBootstrap } from '../../../src/code-runtime/in-sandbox/bootstrap.js'
import type { BootstrapHandle, BootstrapOptions } from '../../../src/code-runtime/in-sandbox/bootstrap.js'
import type { WireEndpoint, WireNamespace } from '../../../src/code-runtime/wire.js'

/** A message the bootstrap posted, as the host receives it. */
export type Posted = Record<string, unknown> & { readonly type: string }

/** Answers one `call` message: `reply(message)` posts a host reply. */
export type CallHandler = (call: Posted, reply: (message: Record<string, unknown>) => void) => void

export interface BootOptions extends BootstrapOptions {
  readonly namespaces?: readonly WireNamespace[]
  readonly maxLogBytes?: number
  readonly maxValueBytes?: number
  readonly onCall?: CallHandler
  /** Sent instead of the usual `start` message (to test malformed starts). */
  readonly start?: unknown
  /** Wraps the bootstrap's end of the channel (to observe or fail its calls). */
  readonly wrap?: (port: WireEndpoint) => WireEndpoint
  /** Called with the handle right after `start` is posted. */
  readonly afterStart?: (handle: BootstrapHandle, post: (message: unknown) => void) => void
}

export interface BootResult {
  /** Everything posted, in order (`ready` first, `done` last). */
  readonly posted: readonly Posted[]
  readonly done: Posted
  readonly logs: ReadonlyArray<{ readonly level: unknown; readonly text: unknown }>
  readonly calls: readonly Posted[]
}

const SWAPPED = ['console', 'ToolCallError'] as const

/** Runs `program` through a fresh bootstrap; resolves once it posts `done` (and any message after it has had time to arrive). */
export async function boot(program: string, options: BootOptions = {}): Promise<BootResult> {
  const namespaces = options.namespaces ?? []
  const names = [...SWAPPED, ...namespaces.map((n) => n.global)]
  const saved = names.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)] as const)
  const { port1, port2 } = new MessageChannel()
  const posted: Posted[] = []
  try {
    const done = new Promise<Posted>((resolve) => {
      port2.addEventListener('message', (event: MessageEvent) => {
        const message = event.data as Posted
        posted.push(message)
        if (message.type === 'call') options.onCall?.(message, (reply) => port2.postMessage(reply))
        if (message.type === 'done') resolve(message)
      })
    })
    port2.start()
    const endpoint = options.wrap?.(port1 as unknown as WireEndpoint) ?? (port1 as unknown as WireEndpoint)
    const handle = startBootstrap(endpoint, options.flush === undefined ? {} : { flush: options.flush })
    const start = options.start ?? {
      type: 'start',
      program,
      namespaces,
      maxLogBytes: options.maxLogBytes ?? 65_536,
      maxValueBytes: options.maxValueBytes ?? 65_536,
    }
    port2.postMessage(start)
    options.afterStart?.(handle, (message) => port2.postMessage(message))
    const last = await done
    // Late messages (a second `done`, a log after the outcome) would arrive within a turn or two.
    await new Promise((resolve) => setTimeout(resolve, 20))
    return {
      posted,
      done: last,
      logs: posted.filter((m) => m.type === 'log').map((m) => ({ level: m.level, text: m.text })),
      calls: posted.filter((m) => m.type === 'call'),
    }
  } finally {
    port1.close()
    port2.close()
    for (const [name, descriptor] of saved) {
      if (descriptor === undefined) Reflect.deleteProperty(globalThis, name)
      else Object.defineProperty(globalThis, name, descriptor)
    }
  }
}

/** The texts of a run's console lines. */
export const texts = (result: BootResult): unknown[] => result.logs.map((l) => l.text)
