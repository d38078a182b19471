import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { truncateToBytes, utf8ByteLength } from '../../../src/code-mode/render-output.js'
import { utf8Length as renderLength, utf8Prefix as renderPrefix } from '../../../src/code-runtime/render.js'
import { utf8Length as runTableLength } from '../../../src/durable/run-table.js'
import { utf8Length, utf8Pieces, utf8Prefix } from '../../../src/util/utf8.js'

const encoded = (text: string): number => new TextEncoder().encode(text).length

// Lone surrogates at every position, pairs, a reversed pair, and each UTF-8 width.
const samples = ['', 'a', 'é', '€', '😀', '\ud800', '\udc00', 'a\ud800', '\ud800a', '\udc00\ud800', '\ud800\ud800\udc00', 'x😀y\udbff', '\udfff😀', 'aé€😀\ud83d']

describe('one UTF-8 size rule (a lone surrogate counts 3 bytes, as TextEncoder writes U+FFFD)', () => {
  it('every exported counter agrees with TextEncoder', () => {
    for (const text of samples) {
      const want = encoded(text)
      expect([utf8Length(text), renderLength(text), runTableLength(text), utf8ByteLength(text)], JSON.stringify(text)).toEqual([want, want, want, want])
    }
  })

  it('stops counting past stopAbove, and only then', () => {
    const text = '€'.repeat(1000)
    expect(utf8Length(text, 10)).toBeGreaterThan(10)
    expect(utf8Length(text, 10)).toBeLessThan(20)
    expect(utf8Length(text, 3000)).toBe(3000)
  })

  it('a prefix is the longest that fits, and never splits a pair', () => {
    for (const text of samples) {
      for (let max = 0; max <= encoded(text) + 1; max++) {
        const prefix = utf8Prefix(text, max)
        expect(renderPrefix(text, max)).toBe(prefix)
        expect(text.startsWith(prefix)).toBe(true)
        expect(encoded(prefix)).toBeLessThanOrEqual(max)
        if (prefix.length < text.length) {
          const next = text.codePointAt(prefix.length)!
          expect(encoded(prefix + String.fromCodePoint(next)), `${JSON.stringify(text)} at ${max}`).toBeGreaterThan(max)
        }
      }
    }
    expect(truncateToBytes('\ud800\ud800', 3)).toBe('\ud800…')
  })

  it('pieces rejoin to the text, fit the cap and never split a pair', () => {
    for (const text of samples) {
      for (let max = 1; max <= 6; max++) {
        const pieces = utf8Pieces(text, max)
        expect(pieces.join('')).toBe(text)
        for (const piece of pieces) {
          expect(piece).not.toBe('')
          expect(encoded(piece) <= max || [...piece].length === 1).toBe(true)
          expect(/^[\udc00-\udfff]/.test(piece) && /[\ud800-\udbff]$/.test(text.slice(0, text.indexOf(piece)))).toBe(false)
        }
      }
    }
    // A lone high surrogate is not a pair with the letter after it.
    expect(utf8Pieces('\ud800a', 3)).toEqual(['\ud800', 'a'])
  })
})

describe('no other UTF-8 counter', () => {
  it('src, platforms and engine count UTF-8 bytes only through src/util/utf8.ts', () => {
    const root = join(import.meta.dirname, '../../..')
    // The in-sandbox TextEncoder encodes (it writes bytes, with the same U+FFFD rule); nothing else may count.
    const allowed = new Set(['src/util/utf8.ts', 'src/code-runtime/in-sandbox/sandbox-globals.ts'])
    const offenders: string[] = []
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name)
        if (statSync(path).isDirectory()) walk(path)
        else if (/\.ts$/.test(name) && !/^_.*-source\.ts$/.test(name)) {
          const file = relative(root, path).split('\\').join('/')
          if (!allowed.has(file) && /\b0x800\b|\b0x7ff\b/i.test(readFileSync(path, 'utf8'))) offenders.push(file)
        }
      }
    }
    for (const folder of ['src', 'platforms', 'engine']) walk(join(root, folder))
    expect(offenders).toEqual([])
  })
})
