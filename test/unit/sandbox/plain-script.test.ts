/**
 * The thread skips the TypeScript stripper for a program `plainScript` accepts (issue 34: a
 * `return 1` needs no TypeScript, and a thread's first strip is its JIT's cold pass). That is only
 * sound if sucrase would have returned such a program unchanged, or refused it as a syntax error.
 */
import { describe, expect, it } from 'vitest'
import { plainScript } from '../../../engine/quickjs/thread-server.js'
import { stripTypeScript } from '../../../src/code-runtime/strip.js'

describe('plainScript', () => {
  it('accepts plain programs and refuses anything that could carry TypeScript', () => {
    for (const program of ['return 1', 'return 6 * 7', 'const r = await tools.list()\nreturn r.length', "return tools.get('a', [1, 2], { x })", 'const f = async (a, b) => a + b\nreturn f(1, 2)']) {
      expect(plainScript(program), program).toBe(true)
    }
    for (const program of [
      'const a: number = 1', 'return f<T>(x)', 'return x!', 'return a?.b', 'type A = B', 'enum E { A }', 'return x as const', 'return { a: 1 }',
      'function f()\nfunction f() {}', 'class A { private x }', 'declare const x', 'interface I {}', 'return a satisfies B', '@dec class A {}',
      'return 1 // a comment', 'return `t`', `return ${'('.repeat(40)}1${')'.repeat(40)}`, 'x'.repeat(2_001), "return '\\u0041'",
    ]) {
      expect(plainScript(program), program).toBe(false)
    }
  })

  it('accepts only programs that sucrase returns unchanged or refuses (20,000 random programs from plain tokens)', () => {
    const tokens = ['return', ' ', '1', 'x', 'a', 'await', 'const', 'let', '=', '=>', '(', ')', '[', ']', '{', '}', ',', ';', '.', '+', '*', '-', '>', '\n', "'s'", '"d"', 'async', 'new', 'in', 'of', 'for', 'if', 'else', 'typeof', 'void', 'yield', 'static', 'get', 'set']
    let seed = 11
    const next = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), Math.floor(seed / 65_536) % n)
    let accepted = 0
    for (let i = 0; i < 20_000; i++) {
      let program = ''
      for (let k = 1 + next(10); k > 0; k--) program += tokens[next(tokens.length)]
      if (!plainScript(program)) continue
      const stripped = stripTypeScript(program)
      if (stripped.ok) {
        accepted++
        expect(stripped.code, JSON.stringify(program)).toBe(program)
      }
    }
    expect(accepted).toBeGreaterThan(1_000)
  })
})
