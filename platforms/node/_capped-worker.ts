/**
 * `spawnCappedWorker`: a `worker_threads` Worker whose heap caps hold under
 * `--max-old-space-size` / `--max-heap-size` (nodejs/node#43991; docs/runtimes.md).
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { isMainThread, Worker, type WorkerOptions } from 'node:worker_threads'

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

/**
 * Node options that take their value as the next argument: a Node command line's options
 * end at the first argument that is neither an option nor one of these values (the script).
 */
const TAKES_VALUE = new Set(['-r', '--require', '--import', '--loader', '--experimental-loader', '-C', '--conditions', '--env-file', '--input-type', '--inspect-port', '--title', '--openssl-config', '--redirect-warnings', '--secure-heap', '--stack-trace-limit', ...OVERRIDING])

/**
 * This process's Node options from its command line as the OS holds it (Linux
 * `/proc/self/cmdline`), for a worker thread: there `process.execArgv` is the thread's own
 * (vitest's threads, for one, pass their own list), while V8's flags are the process's.
 * Empty where the file does not exist or cannot be read.
 */
function osCommandLineOptions(): string[] {
  let args: string[]
  try {
    // A process's command line is bounded by the OS (ARG_MAX); read once, at load.
    args = readFileSync('/proc/self/cmdline', 'utf8').split('\0').slice(1)
  } catch {
    return []
  }
  const options: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith('-') || arg === '-' || arg === '--') break
    options.push(arg)
    if (TAKES_VALUE.has(arg) && i + 1 < args.length) options.push(args[++i]!)
    // `-e`/`-p` take the program: what follows are its arguments.
    if (arg === '-e' || arg === '--eval' || arg === '-p' || arg === '--print') break
  }
  return options
}

/**
 * The flags this process was started with: `NODE_OPTIONS`, then the command line (which
 * wins): `process.execArgv` on the main thread, the OS's record of it in a worker thread.
 */
function processHeapFlags(): string[] {
  const fromEnv = (process.env.NODE_OPTIONS ?? '').split(/\s+/).filter((arg) => arg !== '')
  return overridingHeapFlags([...fromEnv, ...(isMainThread ? process.execArgv : osCommandLineOptions())])
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
