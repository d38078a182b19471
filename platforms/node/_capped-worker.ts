/**
 * `spawnCappedWorker`: a `worker_threads` Worker whose `resourceLimits` heap caps hold even
 * when the process was started with `--max-old-space-size` or `--max-heap-size` (on the
 * command line or in `NODE_OPTIONS`, as many production services are).
 *
 * Why: V8's heap flags are process-wide and take precedence over the limits a Worker asks
 * for (nodejs/node#43991, documented in Node's `resourceLimits`): under
 * `--max-old-space-size=4096` a worker capped at 512 MB silently gets 4 GB, and a memory
 * bomb in it grows until the machine runs short instead of ending its run as a
 * `worker-exit`. Every thread toolyard starts with a heap cap (the sandbox's threads, the
 * trusted worker runtime, the preflight checker) starts here.
 *
 * How: when such a flag is set, the flag is cleared (`0`: "not set") from just before the
 * Worker is constructed until its isolate exists (its `online` event, or its `exit` if it
 * never starts), then put back. V8 reads the flag only when it configures a
 * new isolate's heap, so the host's own heap keeps its size. Spawns that overlap share one
 * window. The cost of the window: a Worker that other code starts while it is open gets
 * V8's default heap size instead of the flag's (windows last milliseconds, and only while
 * one of ours is starting).
 *
 * @module
 */
import { setFlagsFromString } from 'node:v8'
import { Worker, type WorkerOptions } from 'node:worker_threads'

/** The V8 flags that override `resourceLimits`, in both spellings. */
const OVERRIDING = new Set(['--max-old-space-size', '--max_old_space_size', '--max-heap-size', '--max_heap_size'])

/**
 * The overriding heap flags in a list of Node/V8 arguments, as `--name=value`, the last of
 * each name winning (`--max-old-space-size=4096` and `--max-old-space-size 4096` forms).
 */
export function overridingHeapFlags(args: readonly string[]): string[] {
  const found = new Map<string, string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const equals = arg.indexOf('=')
    const name = equals === -1 ? arg : arg.slice(0, equals)
    if (!OVERRIDING.has(name)) continue
    const value = equals === -1 ? args[++i] : arg.slice(equals + 1)
    if (value !== undefined) found.set(name.replaceAll('_', '-'), value)
  }
  return [...found].map(([name, value]) => `${name}=${value}`)
}

/** The flags this process was started with: its `execArgv`, then `NODE_OPTIONS` (which Node reads first, so the command line wins). */
function processHeapFlags(): string[] {
  const fromEnv = (process.env.NODE_OPTIONS ?? '').split(/\s+/).filter((arg) => arg !== '')
  return overridingHeapFlags([...fromEnv, ...process.execArgv])
}

const restore = processHeapFlags()
let openWindows = 0

function closeWindow(): void {
  if (--openWindows === 0) setFlagsFromString(restore.join(' '))
}

/**
 * `new Worker(filename, options)`, with `options.resourceLimits` enforced whatever heap
 * flags the process runs with (see the module comment).
 */
export function spawnCappedWorker(filename: string | URL, options: WorkerOptions): Worker {
  if (restore.length === 0) return new Worker(filename, options)
  if (openWindows++ === 0) setFlagsFromString('--max-old-space-size=0 --max-heap-size=0')
  let worker: Worker
  try {
    worker = new Worker(filename, options)
  } catch (error) {
    closeWindow()
    throw error
  }
  let open = true
  const close = () => {
    if (!open) return
    open = false
    closeWindow()
  }
  // No 'error' listener: the caller's own decides what an error means ('exit' follows it).
  worker.once('online', close)
  worker.once('exit', close)
  return worker
}
