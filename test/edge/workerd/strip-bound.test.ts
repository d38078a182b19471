/**
 * Stripping's work bound holds inside workerd too (the `workerd` project), where
 * `createQuickJsRuntime` strips inline, in the request's own isolate: the bundled
 * sucrase is the copy whose parser state the meter wraps, so the program that froze a
 * server is refused promptly, and syntax errors name line and column here as well.
 */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { stripTypeScript } from '../../../src/code-runtime/strip.js'

const castChain = (levels: number) => '<T>('.repeat(levels) + 'x' + ')'.repeat(levels)
const AMBIGUOUS = /^SyntaxError: the program's syntax is too ambiguous to strip within the work budget \(line 1\): /

describe('stripping in workerd', () => {
  it('refuses 30 nested type assertions instead of backtracking for hours', () => {
    const out = stripTypeScript(`return ${castChain(30)}`)
    expect(out).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
  })

  it('createQuickJsRuntime answers with the same exceptions, line and column included', async () => {
    const runtime = createQuickJsRuntime({ wasmModule, memoryMb: 32 })
    try {
      const ambiguous = await runtime.run({ program: `return ${castChain(30)}`, bindings: [] })
      expect(ambiguous.error).toEqual({ kind: 'exception', message: expect.stringMatching(AMBIGUOUS) })
      const atEnd = await runtime.run({ program: 'const a: number = 1\nreturn (a +', bindings: [] })
      expect(atEnd.error).toEqual({ kind: 'exception', message: 'SyntaxError: Unexpected token (line 2, column 12: at the end of the program)' })
    } finally {
      await runtime.dispose()
    }
  })
})
