/**
 * Where stripping runs (issue 19): the default sandbox strips a program's TypeScript in
 * the run's own thread, under its compute budget, so no program text is parsed on the
 * host's event loop; a syntax error comes back as the same `exception` as before. And
 * syntax errors name line and column in every runtime (issue 23), the end of the program
 * included.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { CodeRunResult, CodeRuntime } from '../../../src/code-runtime/contract.js'
import { MAX_PROGRAM_CHARS, stripTypeScript } from '../../../src/code-runtime/strip.js'
import { createNodeWorkerRuntime, createSandboxRuntime } from '../../../platforms/node/index.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'

const created: CodeRuntime[] = []
afterEach(async () => {
  await Promise.all(created.splice(0).map((runtime) => runtime.dispose()))
})
function keep<T extends CodeRuntime>(runtime: T): T {
  created.push(runtime)
  return runtime
}

/**
 * While `during` runs, a 2 ms host interval measures the longest gap between its ticks
 * and the time it was held up in total (every gap beyond 20 ms, summed).
 */
async function hostDelay<T>(during: () => Promise<T>): Promise<{ stall: number; blocked: number; value: T }> {
  let last = performance.now()
  let stall = 0
  let blocked = 0
  const tick = () => {
    const now = performance.now()
    stall = Math.max(stall, now - last)
    blocked += Math.max(0, now - last - 20)
    last = now
  }
  const timer = setInterval(tick, 2)
  try {
    const value = await during()
    // The gap since the last tick counts too (a loop blocked to the end never ticks at all).
    tick()
    return { stall, blocked, value }
  } finally {
    clearInterval(timer)
  }
}

/**
 * Counts sucrase parser states created on this thread while `during` runs: every parse
 * sucrase does starts with a fresh state, whose constructor assigns this field first.
 */
async function parsesOnThisThread<T>(during: () => Promise<T>): Promise<{ parses: number; value: T }> {
  let parses = 0
  const field = 'inDisallowConditionalTypesContext'
  Object.defineProperty(Object.prototype, field, {
    configurable: true,
    set(this: object, value: unknown) {
      parses++
      Object.defineProperty(this, field, { value, writable: true, enumerable: true, configurable: true })
    },
  })
  try {
    const value = await during()
    return { parses, value }
  } finally {
    delete (Object.prototype as Record<string, unknown>)[field]
  }
}

const castChain = (levels: number) => '<T>('.repeat(levels) + 'x' + ')'.repeat(levels)
/** A program at the size cap that makes sucrase backtrack on every line: the costliest strip that is still bounded. */
const worstProgram = (): string => {
  const line = `y = ${castChain(14)}\n`
  return line.repeat(Math.floor(MAX_PROGRAM_CHARS / line.length))
}
const AMBIGUOUS = /^SyntaxError: the program's syntax is too ambiguous to strip within the work budget \(line \d+\): /

describe('createSandboxRuntime: stripping runs in the sandbox thread', () => {
  it('answers the 158-byte program that froze the server with a clear exception', async () => {
    const runtime = keep(createSandboxRuntime({ memoryMb: 32 }))
    await runtime.warm()
    const result = await runtime.run({ program: `return ${castChain(30)}`, bindings: [] })
    expect(result.error).toEqual({ kind: 'exception', message: expect.stringMatching(AMBIGUOUS) })
    // The thread is still good for the next run.
    const next = await runtime.run({ program: 'const a: number = 41\nreturn a + 1', bindings: [] })
    expect(next.value).toBe(42)
  }, 60_000)

  it('never parses the program on the host thread: the trap that sees every sucrase parse here sees none', async () => {
    const runtime = keep(createSandboxRuntime({ memoryMb: 32 }))
    await runtime.warm()
    stripTypeScript('return 1') // installs the stripper's work meter, which looks for sucrase's states the same way
    // The trap works: a strip on this thread is seen.
    const local = await parsesOnThisThread(async () => stripTypeScript('const a: number = 1\nreturn a'))
    expect(local.value.ok).toBe(true)
    expect(local.parses).toBeGreaterThan(0)
    const { parses, value } = await parsesOnThisThread(async () => [
      await runtime.run({ program: 'const a: number = 41\nreturn a + 1', bindings: [] }),
      await runtime.run({ program: 'return (', bindings: [] }),
    ])
    expect(value[0]!.value).toBe(42)
    expect(value[1]!.error?.message).toMatch(/^SyntaxError: Unexpected token \(line 1, column 9: at the end of the program\)$/)
    expect(parses).toBe(0)
  }, 60_000)

  it('keeps the host event loop turning while the worst accepted programs are stripped', async () => {
    const program = worstProgram()
    // On this thread, the same strip holds the event loop for all of its time.
    const started = performance.now()
    expect(stripTypeScript(program).ok).toBe(false)
    const onHostMs = performance.now() - started

    const runtime = keep(createSandboxRuntime({ memoryMb: 32, computeMs: 60_000, maxConcurrentRuns: 1, prespawn: 1 }))
    await runtime.warm()
    const { stall, blocked, value } = await hostDelay(async () => {
      const results: CodeRunResult[] = []
      // Three in a row on one thread: stripping them on the host would hold it up three times over.
      for (let i = 0; i < 3; i++) results.push(await runtime.run({ program, bindings: [] }))
      return results
    })
    for (const result of value) expect(result.error).toEqual({ kind: 'exception', message: expect.stringMatching(AMBIGUOUS) })
    // Stripped on the host, the three would hold it up ~3 × onHostMs; in the thread the host only
    // posts the text and reads a short answer. Wide margins: other test files load this machine.
    expect(blocked, `host held up ${blocked.toFixed(0)} ms in all (longest gap ${stall.toFixed(0)} ms); one strip here took ${onHostMs.toFixed(0)} ms`).toBeLessThan(onHostMs)
    expect(stall).toBeLessThan(Math.max(1_000, onHostMs))
  }, 120_000)

  it('charges the strip to the run: a budget smaller than the strip ends the run as timeout', async () => {
    const runtime = keep(createSandboxRuntime({ memoryMb: 32, computeMs: 1 }))
    await runtime.warm()
    const result = await runtime.run({ program: worstProgram(), bindings: [] })
    expect(result.error?.kind).toBe('timeout')
  }, 60_000)

  it('refuses a program over the size cap on the host, from its length alone', async () => {
    const runtime = keep(createSandboxRuntime({ memoryMb: 32 }))
    const program = `//${'x'.repeat(MAX_PROGRAM_CHARS)}`
    const result = await runtime.run({ program, bindings: [] })
    expect(result.error).toEqual({
      kind: 'exception',
      message: `SyntaxError: the program is ${program.length} characters long; at most ${MAX_PROGRAM_CHARS} are accepted: pass data through tool calls instead of embedding it, or split the work into several runs`,
    })
  })
})

describe('syntax errors name line and column in every runtime', () => {
  const factories: ReadonlyArray<readonly [string, () => CodeRuntime]> = [
    ['createSandboxRuntime', () => createSandboxRuntime({ memoryMb: 32 })],
    ['createQuickJsRuntime', () => createQuickJsRuntime()],
    ['createNodeWorkerRuntime', () => createNodeWorkerRuntime()],
  ]
  it.each(factories)('%s: an error at the end of the program gives its last line and column', async (_name, factory) => {
    const runtime = keep(factory())
    const atEnd = await runtime.run({ program: 'const a: number = 1\nreturn (a +', bindings: [] })
    expect(atEnd.error).toEqual({ kind: 'exception', message: 'SyntaxError: Unexpected token (line 2, column 12: at the end of the program)' })
    const inside = await runtime.run({ program: 'const a = 1\nlet x = )', bindings: [] })
    expect(inside.error).toEqual({ kind: 'exception', message: expect.stringMatching(/^SyntaxError: .* \(line 2, column 9\)$/) })
    const ambiguous = await runtime.run({ program: `return ${castChain(30)}`, bindings: [] })
    expect(ambiguous.error).toEqual({ kind: 'exception', message: expect.stringMatching(AMBIGUOUS) })
    // Errors only the engine finds (the stripper accepts both): QuickJS names a program frame, V8's position is recovered.
    for (const program of ['const a = 1\nconst a = 2\nreturn a', 'let x = 1\nfunction f() { await 1 }\nreturn 1']) {
      const engine = await runtime.run({ program, bindings: [] })
      expect(engine.error?.kind).toBe('exception')
      expect(engine.error?.message).toMatch(/^SyntaxError: [^\n]+(\(line 2, column \d+\)$|\n {4}at program\.ts:2:\d+)/)
    }
  }, 60_000)

  it('createNodeWorkerRuntime: a syntax error only V8 finds names its line and column', async () => {
    const runtime = keep(createNodeWorkerRuntime())
    const twice = await runtime.run({ program: 'const a = 1\nconst a = 2\nreturn a', bindings: [] })
    expect(twice.error).toEqual({ kind: 'exception', message: "SyntaxError: Identifier 'a' has already been declared (line 2, column 7)" })
    const awaitInPlain = await runtime.run({ program: 'let x = 1\nfunction f() { await 1 }\nreturn 1', bindings: [] })
    expect(awaitInPlain.error?.message).toMatch(/^SyntaxError: .* \(line 2, column 16\)$/)
    // A valid program still runs (the check compiles, never runs, the program).
    expect((await runtime.run({ program: 'const a: number = 1\nreturn await Promise.resolve(a + 1)', bindings: [] })).value).toBe(2)
  }, 60_000)
})
