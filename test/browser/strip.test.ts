import { describe, expect, it } from 'vitest'
import { stripTypeScript } from '../../src/code-runtime/strip.js'

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
})
