import { afterEach, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../platforms/browser/index.js'
import type { SandboxRuntime } from '../../platforms/browser/index.js'
import { stripTypeScript } from '../../src/code-runtime/strip.js'

const castChain = (levels: number) => '<T>('.repeat(levels) + 'x' + ')'.repeat(levels)
const AMBIGUOUS = /^SyntaxError: the program's syntax is too ambiguous to strip within the work budget \(line 1\): /

/** The shared stripper loads and works in Chromium (sucrase's internals are CommonJS). */
describe('stripTypeScript in the browser', () => {
  it('erases types and keeps line numbers', () => {
    const out = stripTypeScript('const a: number = 1\ninterface X { y: string }\nreturn a as number')
    expect(out.ok).toBe(true)
    if (out.ok) {
      expect(out.code.split('\n')).toHaveLength(3)
      expect(out.code).not.toContain(': number')
    }
  })

  it('rejects an enum with a message naming the line', () => {
    const out = stripTypeScript('\nenum E { A }')
    expect(out.ok).toBe(false)
    if (!out.ok) expect(out.message).toMatch(/line 2/)
  })

  it('holds its work bound here too: 30 nested `<T>(` are refused, not backtracked for hours', () => {
    expect(stripTypeScript(`return ${castChain(30)}`)).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
  })
})

/** The page's sandbox strips in its Web Worker: the same answers, and the page's thread never parses the program. */
describe('createSandboxRuntime in the browser: stripping in the worker', () => {
  const created: SandboxRuntime[] = []
  afterEach(async () => {
    await Promise.all(created.splice(0).map((runtime) => runtime.dispose()))
  })

  it('answers a pathological program and a syntax error at the end with the same messages as Node, parsing nothing on the page', async () => {
    const runtime = createSandboxRuntime({ memoryMb: 32 })
    created.push(runtime)
    stripTypeScript('return 1') // installs the stripper's work meter, which looks for sucrase's states the same way
    // Every sucrase parse starts with a fresh parser state whose constructor assigns this field: count them on the page.
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
      stripTypeScript('const seen: number = 1')
      expect(parses).toBeGreaterThan(0)
      parses = 0
      await runtime.run({ program: 'const a: number = 1\nreturn a', bindings: [] })
      expect(parses).toBe(0)
    } finally {
      delete (Object.prototype as Record<string, unknown>)[field]
    }
    const ambiguous = await runtime.run({ program: `return ${castChain(30)}`, bindings: [] })
    expect(ambiguous.error).toEqual({ kind: 'exception', message: expect.stringMatching(AMBIGUOUS) })
    const atEnd = await runtime.run({ program: 'const a: number = 1\nreturn (a +', bindings: [] })
    expect(atEnd.error).toEqual({ kind: 'exception', message: 'SyntaxError: Unexpected token (line 2, column 12: at the end of the program)' })
    const ok = await runtime.run({ program: 'const a: number = 41\nreturn a + 1', bindings: [] })
    expect(ok.value).toBe(42)
  }, 60_000)
})
