/**
 * TypeScript stripping and the JSON-text endpoint, at the edges the other suites leave
 * open: parameter properties after bracketed defaults and next to class bodies, the JSX
 * reading a type assertion must not get, positions on lines 10 and beyond, a program that
 * closes the wrapper function; and JSON `null` where the endpoint expects an object, and
 * QuickJS frames with multi-digit lines or a colon that is not a column.
 */
import { describe, expect, it } from 'vitest'
import type { CodeRunFailureKind } from '../../../src/code-runtime/contract.js'
import { JsonWireEndpoint } from '../../../src/code-runtime/json-endpoint.js'
import { stripTypeScript } from '../../../src/code-runtime/strip.js'

const PARAMETER_PROPERTY = (line: number) =>
  `SyntaxError: parameter properties are not supported: only erasable TypeScript is accepted (line ${line}); assign the field in the constructor body instead`

describe('stripTypeScript: parameter properties', () => {
  it('are found after a default holding parentheses, brackets, braces or a template substitution', () => {
    for (const value of ['(1)', '[1]', '{}', '`${1}`', '[(1), { a: [2] }]']) {
      expect(stripTypeScript(`class A {\n  constructor(a = ${value},\n    private b: number) {}\n}`)).toEqual({ ok: false, message: PARAMETER_PROPERTY(3) })
    }
  })

  it('are only the constructor’s own parameters: modifiers of a class in a default or after the constructor are erased', () => {
    expect(stripTypeScript('class A { constructor(a = class { private x = 1 }) {} }\nreturn new A()')).toEqual({
      ok: true,
      code: 'class A { constructor(a = class {  x = 1 }) {} }\nreturn new A()',
    })
    expect(stripTypeScript('class A { constructor() {} }\nreturn (class { private x = 1 })')).toEqual({
      ok: true,
      code: 'class A { constructor() {} }\nreturn (class {  x = 1 })',
    })
  })

  it('need a constructor followed by its parameter list: a value named constructor before a class body is no constructor', () => {
    expect(stripTypeScript('const constructor = class {}\nclass B extends constructor { private x = 1 }\nreturn new B()')).toEqual({
      ok: true,
      code: 'const constructor = class {}\nclass B extends constructor {  x = 1 }\nreturn new B()',
    })
  })
})

describe('stripTypeScript: what sucrase is asked to read', () => {
  it('reads a program naming a rejected word as TypeScript, not JSX: a type assertion is erased', () => {
    expect(stripTypeScript('const constructor = 1\nreturn <number>constructor')).toEqual({ ok: true, code: 'const constructor = 1\nreturn constructor' })
  })

  it('refuses a program that closes the wrapper function so that its types swallow the closing brace', () => {
    expect(stripTypeScript('}\ninterface I {')).toEqual({ ok: false, message: 'SyntaxError: the program could not be stripped of its types' })
    expect(stripTypeScript('}\ntype T = {')).toEqual({ ok: false, message: 'SyntaxError: the program could not be stripped of its types' })
  })
})

describe('stripTypeScript: syntax error positions on multi-digit lines', () => {
  it('names line 10 and beyond with its column', () => {
    expect(stripTypeScript(`${'\n'.repeat(9)}let x = )`)).toEqual({ ok: false, message: 'SyntaxError: Unexpected token (line 10, column 9)' })
    expect(stripTypeScript(`let a = 1${'\n'.repeat(12)}foo(\n  1 2)`)).toEqual({ ok: false, message: 'SyntaxError: Unexpected token, expected "," (line 14, column 5)' })
  })

  it('reports an error past the last of ten or more lines at the end of the program', () => {
    expect(stripTypeScript(`${'\n'.repeat(10)}return (`)).toEqual({ ok: false, message: 'SyntaxError: Unexpected token (line 11, column 9: at the end of the program)' })
  })
})

function endpoint() {
  const failures: Array<[CodeRunFailureKind, string]> = []
  const received: unknown[] = []
  const ep = new JsonWireEndpoint(() => {}, (kind, message) => failures.push([kind, message]), 64)
  ep.addEventListener('message', (event) => received.push(event.data))
  return { ep, failures, received }
}

describe('JsonWireEndpoint: null where an object is expected', () => {
  it('hands a null message to the listeners as is', () => {
    const { ep, received, failures } = endpoint()
    expect(() => ep.receive('null')).not.toThrow()
    expect(received).toEqual([null])
    expect(failures).toEqual([])
  })

  it('hands a done message with a null error to the listeners unchanged', () => {
    const { ep, received, failures } = endpoint()
    expect(() => ep.receive('{"type":"done","error":null}')).not.toThrow()
    expect(received).toEqual([{ type: 'done', error: null }])
    expect(failures).toEqual([])
  })
})

describe('JsonWireEndpoint: program frames', () => {
  const stackOf = (stack: string): string => {
    const { ep, received } = endpoint()
    ep.receive(JSON.stringify({ type: 'done', error: { name: 'Error', message: 'm', stack } }))
    return (received[0] as { error: { stack: string } }).error.stack
  }

  it('shifts a multi-digit line by the two wrapper lines, keeping a multi-digit column', () => {
    expect(stackOf('at f (<input>:12:34)\nat g (<input>:102)')).toBe('at f (program.ts:10:34)\nat g (program.ts:100)')
  })

  it('remaps every frame, even after a colon that is not followed by a column', () => {
    expect(stackOf('<input>:5: not a column\n    at f (<input>:7:1)')).toBe('program.ts:3: not a column\n    at f (program.ts:5:1)')
  })
})
