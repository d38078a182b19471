/**
 * A small but real `CodeRuntime` for the bridge's unit tests: it runs the program
 * in-process as the body of an AsyncFunction (no isolation — test use only), exposes
 * each binding namespace as a parameter, captures `console`, structured-clones every
 * value that crosses (as a worker boundary would), and settles exactly once with
 * `exception`, `timeout` or `abort`. The Node worker runtime replaces it in the
 * integration suite.
 */
import { ToolCallError } from '../../../../src/errors.js'
import type {
  CodeLogEntry,
  CodeRunRequest,
  CodeRunResult,
  CodeRuntime,
} from '../../../../src/code-runtime/contract.js'

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
  ...args: string[]
) => (...args: unknown[]) => Promise<unknown>

/** Options of {@link createInProcessRuntime}. */
export interface InProcessRuntimeOptions {
  /**
   * Wall budget; expiry settles the run with `timeout`. Default 20 s: under the 30 s test timeout
   * (a hang still ends with this message), and no test step on a loaded machine has to beat it.
   */
  readonly wallMs?: number
  /** Ends the run with `timeout` when it resolves: a wall budget the test fires, not the clock. */
  readonly expire?: Promise<unknown>
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/** Creates the in-process test runtime. */
export function createInProcessRuntime(options: InProcessRuntimeOptions = {}): CodeRuntime & { readonly runs: number } {
  let runs = 0
  return {
    language: 'typescript',
    isolation: 'in-process-test',
    capabilities: { streamsLogs: true, memoryLimit: false, capturesStdio: false },
    get runs() {
      return runs
    },
    async run(request: CodeRunRequest): Promise<CodeRunResult> {
      runs++
      const logs: CodeLogEntry[] = []
      const settledCtl = new AbortController()
      let done = false
      const write =
        (level: 'log' | 'info' | 'warn' | 'error' | 'debug') =>
        (...parts: unknown[]): void => {
          if (done) return
          const entry: CodeLogEntry = {
            source: 'console',
            level,
            text: parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' '),
          }
          logs.push(entry)
          try {
            request.onLog?.(entry)
          } catch {
            // ignored by contract
          }
        }
      const consoleShim = { log: write('log'), info: write('info'), warn: write('warn'), error: write('error'), debug: write('debug') }
      const names = request.bindings.map((ns) => ns.global)
      const globals = request.bindings.map((ns) => {
        const target = Object.create(null) as Record<string, unknown>
        for (const name of Object.keys(ns.functions)) {
          const fn = ns.functions[name]!
          Object.defineProperty(target, name, {
            enumerable: true,
            value: async (args: unknown) => {
              const value = await fn(structuredClone(args), { signal: settledCtl.signal }).catch((error: unknown) => {
                // Only name + message cross, as over a port.
                throw new ToolCallError(
                  error instanceof ToolCallError ? error.toolName : name,
                  error instanceof Error ? error.message : String(error),
                )
              })
              return structuredClone(value)
            },
          })
        }
        return target
      })
      let program: (...args: unknown[]) => Promise<unknown>
      try {
        program = new AsyncFunction(...names, 'console', 'ToolCallError', request.program)
      } catch (error) {
        done = true
        return { logs, error: { kind: 'exception', message: messageOf(error) } }
      }
      const outcome = await new Promise<CodeRunResult>((resolve) => {
        const finish = (result: Omit<CodeRunResult, 'logs'>): void => {
          if (done) return
          done = true
          clearTimeout(timer)
          request.signal?.removeEventListener('abort', onAbort)
          resolve({ ...result, logs: [...logs] })
        }
        const onAbort = (): void => finish({ error: { kind: 'abort', message: 'the run was aborted' } })
        const timer = setTimeout(
          () => finish({ error: { kind: 'timeout', message: `wall budget of ${options.wallMs ?? 20_000} ms exceeded (maxWallMs)` } }),
          options.wallMs ?? 20_000,
        )
        void options.expire?.then(() => finish({ error: { kind: 'timeout', message: 'wall budget exceeded (maxWallMs)' } }))
        if (request.signal?.aborted) onAbort()
        else request.signal?.addEventListener('abort', onAbort, { once: true })
        program(...globals, consoleShim, ToolCallError).then(
          (value) => {
            try {
              finish(value === undefined ? {} : { value: structuredClone(value) })
            } catch (error) {
              finish({ error: { kind: 'exception', message: `result could not be cloned: ${messageOf(error)}` } })
            }
          },
          (error: unknown) => finish({ error: { kind: 'exception', message: messageOf(error) } }),
        )
      })
      settledCtl.abort()
      return outcome
    },
    async dispose() {},
  }
}
