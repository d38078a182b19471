import { describe, expect, it } from 'vitest'
import { measureValueBytes, renderValue, utf8Length, utf8Prefix } from '../../../src/code-runtime/render.js'
import { stripTypeScript } from '../../../src/code-runtime/strip.js'

describe('stripTypeScript', () => {
  it('erases types and keeps every line in place', () => {
    const program = ['interface A {', '  x: number', '}', 'const a: A = { x: 1 }', 'type T = string', 'return a.x as number'].join('\n')
    const out = stripTypeScript(program)
    expect(out.ok).toBe(true)
    if (!out.ok) return
    const lines = out.code.split('\n')
    expect(lines).toHaveLength(6)
    expect(lines[3]).toBe('const a = { x: 1 }')
    expect(lines[5]!.trim()).toBe('return a.x')
  })

  it('accepts top-level await and return, dynamic import and import.meta', () => {
    expect(stripTypeScript('const v = await Promise.resolve(1)\nreturn v').ok).toBe(true)
    expect(stripTypeScript("const m = await import('x')").ok).toBe(true)
  })

  it.each([
    ['enum E { A }', /enum declarations are not supported.*erasable.*\(line 1\)/],
    ['const x = 1\nconst enum E { A }', /enum declarations .*\(line 2\)/],
    ['\n\nnamespace N { export const a = 1 }', /namespace declarations .*\(line 3\)/],
    ['module M { }', /namespace declarations/],
    ['class P {\n  constructor(public a: number) {}\n}', /parameter properties .*\(line 2\)/],
    ['class P { constructor(readonly a: number) {} }', /parameter properties/],
    ["import fs from 'node:fs'", /import declarations are not supported/],
    ['export const a = 1', /export declarations are not supported/],
  ])('rejects %j', (program, message) => {
    const out = stripTypeScript(program)
    expect(out.ok).toBe(false)
    if (!out.ok) expect(out.message).toMatch(message)
  })

  it.each([
    'declare enum D { A }\nreturn 1',
    'declare namespace X { const a: number }\nreturn 1',
    "declare module 'x' {}\nreturn 1",
    'let namespace = 1, module = 2, enumerable = 3\nreturn namespace + module + enumerable',
    'class A { private x = 1; constructor(x: number, { a }: { a: number }) {} }',
  ])('accepts erasable or plain %j', (program) => {
    expect(stripTypeScript(program).ok).toBe(true)
  })

  it('reports syntax errors with the model’s line and column', () => {
    const first = stripTypeScript('let x = )')
    expect(first).toEqual({ ok: false, message: expect.stringMatching(/^SyntaxError: .*\(line 1, column 9\)/) })
    const third = stripTypeScript('let a = 1\nlet b = 2\nlet c = )')
    expect(third).toEqual({ ok: false, message: expect.stringMatching(/\(line 3, column 9\)/) })
    const end = stripTypeScript('return 1 +')
    expect(end).toEqual({ ok: false, message: expect.stringMatching(/at the end of the program/) })
  })
})

describe('render helpers', () => {
  it('counts and cuts UTF-8 without splitting surrogate pairs', () => {
    expect(utf8Length('aé✓😀')).toBe(new TextEncoder().encode('aé✓😀').length)
    expect(utf8Prefix('a😀b', 4)).toBe('a')
    expect(utf8Prefix('a😀b', 5)).toBe('a😀')
  })

  it('renders without running getters, with cycles, null prototypes and class names', () => {
    let ran = false
    const obj: Record<string, unknown> = { a: 1, 'b-c': 'x', get g() {
      ran = true
      return 1
    } }
    obj.self = obj
    const text = renderValue([obj, new Map([[1, 'one']]), new Set([2]), Object.create(null), new (class Foo {})(), 10n, -0])
    expect(ran).toBe(false)
    expect(text).toContain('a: 1')
    expect(text).toContain('"b-c": "x"')
    expect(text).toContain('g: [Getter]')
    expect(text).toContain('[Circular]')
    expect(text).toContain('Map(1) { 1 => "one" }')
    expect(text).toContain('Set(1) { 2 }')
    expect(text).toContain('[Object: null prototype]')
    expect(text).toContain('Foo {}')
    expect(text).toContain('10n')
    expect(text).toContain('-0')
  })

  it('is stack-safe and bounded on 100,000-deep values', () => {
    let deep: unknown = 1
    for (let i = 0; i < 100_000; i++) deep = { d: deep }
    expect(renderValue(deep, { maxDepth: 100_000, maxLength: 1_000 }).length).toBeLessThanOrEqual(1_001)
    expect(measureValueBytes(deep, 10_000_000)).toBeGreaterThan(100_000)
    expect(measureValueBytes(deep, 1_000)).toBe(1_001)
  })

  it('measures sizes close to JSON', () => {
    const value = { name: 'x', list: [1, 2, 3], nested: { ok: true } }
    const json = JSON.stringify(value).length
    const measured = measureValueBytes(value, 1_000)
    expect(measured).toBeGreaterThanOrEqual(json - 5)
    expect(measured).toBeLessThanOrEqual(json * 2)
    expect(measureValueBytes(new Uint8Array(5000), 1_000)).toBe(1_001)
  })
})
