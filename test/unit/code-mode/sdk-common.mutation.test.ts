/**
 * What both SDK renderers share, as units: code-point order, tool-set normalization and
 * comment lines; and the language dispatch of `renderToolsSdk`.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { commentLines, compareCodePoints, normalizeSdkTools } from '../../../src/code-mode/sdk-common.js'
import type { SdkToolInput } from '../../../src/code-mode/sdk-common.js'
import { hasSdkRenderer, renderToolsSdk } from '../../../src/code-mode/sdk.js'
import { renderPythonSdk } from '../../../src/code-mode/sdk-python.js'
import { renderTypeScriptSdk } from '../../../src/code-mode/sdk-typescript.js'

const byCodePoints = (a: string, b: string): number => {
  const x = [...a].map((c) => c.codePointAt(0)!)
  const y = [...b].map((c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1
  return Math.sign(x.length - y.length)
}

describe('compareCodePoints', () => {
  it('orders by code point, astral characters after the BMP (unlike UTF-16 order)', () => {
    expect(compareCodePoints('a', 'b')).toBe(-1)
    expect(compareCodePoints('b', 'a')).toBe(1)
    expect(compareCodePoints('ab', 'ab')).toBe(0)
    expect(compareCodePoints('a', 'ab')).toBe(-1)
    expect(compareCodePoints('ab', 'a')).toBe(1)
    expect(compareCodePoints('', '')).toBe(0)
    expect(compareCodePoints('\uffff', '😀')).toBe(-1)
    expect(compareCodePoints('😀', '\uffff')).toBe(1)
    expect(compareCodePoints('😀a', '😀b')).toBe(-1)
    expect(compareCodePoints('😀', '😀x')).toBe(-1)
    expect(compareCodePoints('x😀', 'x😀')).toBe(0)
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 6 }), (a, b) => {
        expect(compareCodePoints(a, b)).toBe(byCodePoints(a, b))
      }),
      { numRuns: 500 },
    )
  })
})

describe('normalizeSdkTools', () => {
  const tool = (name: string, extra: Partial<SdkToolInput> = {}): SdkToolInput => ({ name, description: `about ${name}`, parameters: { type: 'object' }, output: {}, ...extra })

  it('sorts by name, keeps the first of a repeated name, and defaults a missing description', () => {
    const first = tool('b')
    const out = normalizeSdkTools([first, tool('a'), tool('b', { description: 'second' }), { ...tool('c'), description: 7 } as never])
    expect(out.map((t) => t.name)).toEqual(['a', 'b', 'c'])
    expect(out[1]).toEqual(first)
    expect(out[1]).not.toBe(first)
    expect(out[2]!.description).toBe('')
  })

  it('drops malformed entries and survives hostile ones', () => {
    const hostile = new Proxy({}, {
      get() {
        throw new Error('trap')
      },
    })
    expect(normalizeSdkTools([null, 'x', { name: 3 }, [tool('arr')], hostile, tool('ok')] as never).map((t) => t.name)).toEqual(['ok'])
    expect(normalizeSdkTools('tools' as never)).toEqual([])
    const throwing = new Proxy([tool('x')], {
      get(target, key, receiver) {
        if (key === 'length') throw new Error('trap')
        return Reflect.get(target, key, receiver) as unknown
      },
    })
    expect(normalizeSdkTools(throwing)).toEqual([])
  })
})

describe('commentLines', () => {
  it('splits on every line terminator, trims line ends and drops blank edges', () => {
    expect(commentLines('a\r\nb\rc\nd\u2028e\u2029f')).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
    expect(commentLines('\n\n  keep leading space  \n\nsecond \n\n')).toEqual(['  keep leading space', '', 'second'])
    expect(commentLines('')).toEqual([])
    expect(commentLines('\n \n')).toEqual([])
  })
})

describe('renderToolsSdk', () => {
  const tools: SdkToolInput[] = [{ name: 'echo', description: 'Echo.', parameters: { type: 'object', properties: { text: { type: 'string' } } }, output: { type: 'string' } }]

  it('dispatches to the language renderer, TypeScript by default', () => {
    expect(renderToolsSdk(tools)).toBe(renderTypeScriptSdk(tools))
    expect(renderToolsSdk(tools, {})).toBe(renderTypeScriptSdk(tools))
    expect(renderToolsSdk(tools, { language: 'python' })).toBe(renderPythonSdk(tools))
    expect(renderToolsSdk(tools, { language: 'typescript' })).not.toBe(renderPythonSdk(tools))
  })

  it('knows exactly its two languages; an inherited name is not one', () => {
    expect(hasSdkRenderer('typescript')).toBe(true)
    expect(hasSdkRenderer('python')).toBe(true)
    for (const language of ['constructor', 'toString', '__proto__', 'TypeScript', '']) expect(hasSdkRenderer(language)).toBe(false)
    expect(hasSdkRenderer(5 as never)).toBe(false)
    try {
      renderToolsSdk(tools, { language: 'constructor' })
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(ToolError)
      expect((error as ToolError).code).toBe('ASSEMBLY_FAILED')
      expect((error as Error).message).toBe('no Code Mode SDK renderer for language "constructor"')
    }
  })
})
