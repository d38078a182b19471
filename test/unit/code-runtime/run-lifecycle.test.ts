/**
 * The run lifecycle every code runtime shares (src/code-runtime/run-lifecycle.ts) on a
 * recording driver: the disposed check, request preparation, "an abort beats a syntax
 * error", where TypeScript is stripped, run tracking and dispose's order. The drivers
 * themselves are tested with their runtimes (the pool in sandbox/sandbox-runtime.test.ts,
 * the trusted runtimes' slots in code-runtime/trusted-runtime.test.ts).
 */
import { describe, expect, it } from 'vitest'
import type { CodeRunFailureKind, CodeRunResult } from '../../../src/code-runtime/contract.js'
import { failedResult } from '../../../src/code-runtime/host-session.js'
import type { PreparedRun } from '../../../src/code-runtime/host-session.js'
import { DISPOSED_MESSAGE, RunLifecycle, threadExited } from '../../../src/code-runtime/run-lifecycle.js'
import type { RunHandle, RunLifecycleDriver, StripOutcome } from '../../../src/code-runtime/run-lifecycle.js'
import { MAX_PROGRAM_CHARS, programTooLong } from '../../../src/code-runtime/sandbox-protocol.js'
import type { ParkedRunState } from '../../../src/code-runtime/contract.js'

const turn = () => new Promise((resolve) => setTimeout(resolve, 0))

/** A driver that records what happens; each started run waits until the test settles it. */
function recording(options: { strip?: (program: string) => StripOutcome; checkSyntax?: (code: string) => string | undefined } = {}) {
  const events: string[] = []
  const runs: Array<{ run: PreparedRun; program: string; settle: (result: CodeRunResult) => void; quiet: () => void; failures: Array<[CodeRunFailureKind, string]> }> = []
  const driver: RunLifecycleDriver = {
    ...(options.strip === undefined ? {} : { strip: options.strip }),
    ...(options.checkSyntax === undefined ? {} : { checkSyntax: options.checkSyntax }),
    start(run, program) {
      events.push(`start ${program}`)
      let settle!: (result: CodeRunResult) => void
      let quiet!: () => void
      const result = new Promise<CodeRunResult>((resolve) => (settle = resolve))
      const quiescence = new Promise<void>((resolve) => (quiet = resolve))
      const entry = { run, program, settle, quiet, failures: [] as Array<[CodeRunFailureKind, string]> }
      runs.push(entry)
      const handle: RunHandle = {
        result,
        fail: (kind, message) => {
          events.push(`fail ${kind} ${message}`)
          entry.failures.push([kind, message])
          settle(failedResult(kind, message))
        },
        quiescent: () => {
          events.push('quiescent?')
          return quiescence
        },
      }
      return handle
    },
    close: () => void events.push('close'),
    release: async () => void events.push('release'),
  }
  return { driver, events, runs }
}

const vm = { clockMs: 0, timers: [], journal: { inputs: ['s'], reads: [], ops: '', calls: [] } }
const parkedState: ParkedRunState = { version: 1, vm, logs: [], logBytes: 0, logTruncated: false, busyMs: 0, wallMs: 0, lastCallId: 0, calls: [] }

describe('RunLifecycle.run', () => {
  it('refuses a request it cannot read, naming why', async () => {
    const r = recording()
    const lifecycle = new RunLifecycle(r.driver)
    const throwing = Object.defineProperty({}, 'program', {
      get() {
        throw new Error('no access')
      },
    })
    expect((await lifecycle.run(throwing as never)).error).toEqual({ kind: 'exception', message: 'TypeError: the request could not be read (no access)' })
    const plain = Object.defineProperty({}, 'program', {
      get() {
        throw 'nope'
      },
    })
    expect((await lifecycle.run(plain as never)).error).toEqual({ kind: 'exception', message: 'TypeError: the request could not be read (nope)' })
    expect((await lifecycle.run({ program: 7 } as never)).error).toEqual({ kind: 'exception', message: 'TypeError: request.program must be a string' })
    expect(r.events).toEqual([])
  })

  it('an aborted signal beats a syntax error: nothing is stripped or started', async () => {
    let strips = 0
    const r = recording({ strip: () => (strips++, { ok: false, message: 'SyntaxError: bad' }) })
    const lifecycle = new RunLifecycle(r.driver)
    const controller = new AbortController()
    controller.abort('left')
    expect((await lifecycle.run({ bindings: [], program: 'return )', signal: controller.signal })).error).toEqual({ kind: 'abort', message: 'the run was aborted (left)' })
    expect(strips).toBe(0)
    expect((await lifecycle.run({ bindings: [], program: 'return )' })).error).toEqual({ kind: 'exception', message: 'SyntaxError: bad' })
    expect(strips).toBe(1)
    expect(r.events).toEqual([])
  })

  it('with a stripper: the stripped code is checked, then started', async () => {
    const checked: string[] = []
    const r = recording({
      strip: (program) => ({ ok: true, code: program.replace(': number', '') }),
      checkSyntax: (code) => (checked.push(code), code.includes('bad') ? 'SyntaxError: checked' : undefined),
    })
    const lifecycle = new RunLifecycle(r.driver)
    expect((await lifecycle.run({ bindings: [], program: 'bad()' })).error).toEqual({ kind: 'exception', message: 'SyntaxError: checked' })
    void lifecycle.run({ bindings: [], program: 'const a: number = 1' })
    expect(checked).toEqual(['bad()', 'const a = 1'])
    expect(r.events).toEqual(['start const a = 1'])
    expect(r.runs[0]!.run.program).toBe('const a: number = 1')
    const unchecked = recording({ strip: (program) => ({ ok: true, code: `${program};` }) })
    void new RunLifecycle(unchecked.driver).run({ bindings: [], program: 'x' })
    expect(unchecked.events).toEqual(['start x;'])
  })

  it('without a stripper: the program goes as written, its length checked here', async () => {
    const r = recording()
    const lifecycle = new RunLifecycle(r.driver)
    const atCap = 'x'.repeat(MAX_PROGRAM_CHARS)
    void lifecycle.run({ bindings: [], program: atCap })
    expect(r.runs[0]!.program).toBe(atCap)
    const long = `${atCap}x`
    expect((await lifecycle.run({ bindings: [], program: long })).error).toEqual({ kind: 'exception', message: programTooLong(long) })
    expect(r.runs).toHaveLength(1)
  })

  it('a resumed run is never stripped again (its journal holds the stripped program); only its length is checked', async () => {
    let strips = 0
    const r = recording({ strip: () => (strips++, { ok: false, message: 'SyntaxError: would fail' }) })
    const lifecycle = new RunLifecycle(r.driver)
    void lifecycle.run({ bindings: [], program: 'const a: number = 1', durable: { resume: parkedState } })
    expect(strips).toBe(0)
    expect(r.events).toEqual(['start const a: number = 1'])
    const long = 'x'.repeat(MAX_PROGRAM_CHARS + 1)
    expect((await lifecycle.run({ bindings: [], program: long, durable: { resume: parkedState } })).error).toEqual({ kind: 'exception', message: programTooLong(long) })
  })

  it('answers the handle’s result', async () => {
    const r = recording()
    const lifecycle = new RunLifecycle(r.driver)
    const pending = lifecycle.run({ bindings: [], program: 'p' })
    const value = Object.freeze({ value: 1, logs: [], stats: { wallMs: 0, computeMs: 0 } })
    r.runs[0]!.settle(value)
    expect(await pending).toBe(value)
  })
})

describe('RunLifecycle.dispose', () => {
  it('closes the driver first, aborts every live run with one message, waits for each to be quiescent, then releases', async () => {
    const r = recording()
    const lifecycle = new RunLifecycle(r.driver)
    expect(lifecycle.disposed).toBe(false)
    const a = lifecycle.run({ bindings: [], program: 'a' })
    const b = lifecycle.run({ bindings: [], program: 'b' })
    let disposed = false
    const disposing = lifecycle.dispose().then(() => (disposed = true))
    expect(lifecycle.disposed).toBe(true)
    expect((await a).error).toEqual({ kind: 'abort', message: DISPOSED_MESSAGE })
    expect((await b).error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
    await turn()
    expect(disposed).toBe(false)
    r.runs[0]!.quiet()
    await turn()
    expect(disposed).toBe(false)
    r.runs[1]!.quiet()
    await disposing
    expect(r.events.filter((e) => !e.startsWith('quiescent'))).toEqual(['start a', 'start b', 'close', `fail abort ${DISPOSED_MESSAGE}`, `fail abort ${DISPOSED_MESSAGE}`, 'release'])
    // After dispose: refused at once, nothing started.
    expect((await lifecycle.run({ bindings: [], program: 'c' })).error).toEqual({ kind: 'abort', message: DISPOSED_MESSAGE })
    expect(r.runs).toHaveLength(2)
  })

  it('a run that has settled and gone quiet is no longer live: dispose does not fail it', async () => {
    const r = recording()
    const lifecycle = new RunLifecycle(r.driver)
    const a = lifecycle.run({ bindings: [], program: 'a' })
    r.runs[0]!.settle(failedResult('exception', 'done'))
    r.runs[0]!.quiet()
    await a
    await turn()
    await lifecycle.dispose()
    expect(r.runs[0]!.failures).toEqual([])
  })

  it('a settled run that is not quiet yet stays live until it is', async () => {
    const r = recording()
    const lifecycle = new RunLifecycle(r.driver)
    const a = lifecycle.run({ bindings: [], program: 'a' })
    r.runs[0]!.settle(failedResult('exception', 'done'))
    await a
    await turn()
    let disposed = false
    const disposing = lifecycle.dispose().then(() => (disposed = true))
    await turn()
    expect(disposed).toBe(false)
    expect(r.runs[0]!.failures).toEqual([['abort', DISPOSED_MESSAGE]])
    r.runs[0]!.quiet()
    await disposing
  })

  it('works with a driver that has neither close nor release', async () => {
    const lifecycle = new RunLifecycle({ start: () => ({ result: Promise.resolve(failedResult('exception', 'x')), fail: () => undefined, quiescent: () => Promise.resolve() }) })
    await lifecycle.run({ bindings: [], program: 'a' })
    await expect(lifecycle.dispose()).resolves.toBeUndefined()
  })
})

describe('threadExited', () => {
  it('names the reason', () => {
    expect(threadExited('exit code 1')).toBe('the thread running the program exited: exit code 1')
  })
})
