/**
 * The one child-process helper of the tests: start a process in its own group, wait for a
 * line of its output by deadline, keep its output bounded, kill the whole group on teardown.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'

/** How {@link startChild} starts a process. */
export interface ChildOptions {
  /** Working directory (default: the test's). */
  readonly cwd?: string
  /** Variables added to `process.env`; a value `undefined` removes that variable. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Characters of output kept, the latest ones (default 1 MiB). */
  readonly keep?: number
  /** Called with each chunk of stdout and stderr as it arrives (a trace file, a live log). */
  readonly onOutput?: (text: string, stream: 'stdout' | 'stderr') => void
}

/** How a child ended: its exit code or signal; `error` when it could not start at all. */
export interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly error?: string
}

/** A started child process; see {@link startChild}. */
export interface Child {
  /** The process itself (its pid, its streams). */
  readonly process: ChildProcess
  /** Its stdout and stderr interleaved, bounded to the latest `keep` characters. */
  readonly output: string
  /** Its stdout alone, bounded the same way. */
  readonly stdout: string
  /** Its stderr alone, bounded the same way. */
  readonly stderr: string
  /** Resolves once the process has exited (or could not start). */
  readonly exited: Promise<ChildExit>
  /**
   * Resolves with the first value `match` returns other than `undefined`, checked against
   * `stdout` on each chunk; rejects when the process exits first or after `ms`, with the
   * tail of its output in the message.
   */
  waitFor<T>(match: (stdout: string, output: string) => T | undefined, what: string, ms?: number): Promise<T>
  /** Sends `signal` (default SIGKILL) to the child's whole process group. */
  kill(signal?: NodeJS.Signals): void
  /** Kills the group with SIGKILL and resolves once the child has exited. */
  stop(): Promise<ChildExit>
  /** Waits up to `ms` for the exit; past it, kills the group and notes it in `output`. */
  exit(ms: number): Promise<ChildExit & { readonly timedOut: boolean }>
}

const live = new Set<Child>()
let hooked = false

/** Kills every child still running (the test process exiting must not leave servers behind). */
function killAll(): void {
  for (const child of live) child.kill('SIGKILL')
}

const bounded = (text: string, keep: number) => (text.length <= keep ? text : text.slice(text.length - keep))

/**
 * Starts `command` with `args` in a new process group (so a kill reaches what it spawned),
 * stdout and stderr piped and collected. Every child still running when the test process
 * exits is killed; tests stop theirs in `afterAll` with {@link stopChildren} or `stop()`.
 */
export function startChild(command: string, args: readonly string[], options: ChildOptions = {}): Child {
  const keep = options.keep ?? 1 << 20
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  const proc = spawn(command, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let output = ''
  let stdout = ''
  let stderr = ''
  const listeners = new Set<() => void>()
  const take = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    output = bounded(output + text, keep)
    if (stream === 'stdout') stdout = bounded(stdout + text, keep)
    else stderr = bounded(stderr + text, keep)
    options.onOutput?.(text, stream)
    for (const listener of listeners) listener()
  }
  proc.stdout!.on('data', take('stdout'))
  proc.stderr!.on('data', take('stderr'))
  let ended: ChildExit | undefined
  const exited = new Promise<ChildExit>((resolve) => {
    proc.once('error', (error) => {
      output += `\n[could not start: ${error.message}]\n`
      ended ??= { code: null, signal: null, error: error.message }
      resolve(ended)
    })
    // 'close': the streams are drained too, so `output` is complete when this resolves.
    proc.once('close', (code, signal) => {
      ended ??= { code, signal }
      resolve(ended)
    })
  }).finally(() => {
    live.delete(child)
    for (const listener of listeners) listener()
  })

  const child: Child = {
    process: proc,
    get output() {
      return output
    },
    get stdout() {
      return stdout
    },
    get stderr() {
      return stderr
    },
    exited,
    waitFor(match, what, ms = 90_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const value = match(stdout, output)
          if (value !== undefined) finish(() => resolve(value))
          else if (ended !== undefined) finish(() => reject(new Error(`the child exited (${JSON.stringify(ended)}) before ${what}: ${output.slice(-600)}`)))
        }
        const timer = setTimeout(() => finish(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}: ${output.slice(-600)}`))), ms)
        const finish = (settle: () => void) => {
          clearTimeout(timer)
          listeners.delete(check)
          settle()
        }
        listeners.add(check)
        check()
      })
    },
    kill(signal = 'SIGKILL') {
      if (ended !== undefined || proc.pid === undefined) return
      try {
        process.kill(-proc.pid, signal)
      } catch {
        // The group is gone already (the child exited between the check and the kill).
      }
    },
    async stop() {
      child.kill('SIGKILL')
      return exited
    },
    async exit(ms) {
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        output += `\n[killed after ${ms} ms]\n`
        child.kill('SIGKILL')
      }, ms)
      const result = await exited
      clearTimeout(timer)
      return { ...result, timedOut }
    },
  }
  live.add(child)
  if (!hooked) {
    hooked = true
    process.once('exit', killAll)
  }
  return child
}

/** Stops every child {@link startChild} started that is still running (for `afterAll`). */
export async function stopChildren(): Promise<void> {
  await Promise.all([...live].map((child) => child.stop()))
}
