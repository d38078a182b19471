/**
 * The canonical arguments hash decisions and exactly-once records are bound to: SHA-256 of
 * the arguments' JSON with sorted keys (for arguments within one slice, exactly that), the
 * same whatever the key order, streamed in slices so large or deep arguments build no giant
 * string and need no call stack.
 */
import { describe, expect, it } from 'vitest'
import { argumentsHash, isArgumentsHash } from '../../../src/durable/call-key.js'
import type { JsonValue } from '../../../src/json/json-value.js'

async function sha256(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('')
}

function sortedJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`
  return `{${Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${sortedJson(value[key]!)}`)
    .join(',')}}`
}

describe('argumentsHash', () => {
  it('is SHA-256 of the canonical JSON (sorted keys, no spaces) for arguments within one slice', async () => {
    for (const value of [{}, [], null, 0, 'é\u2028"\\', { b: [1, { d: true, c: null }], a: 'x', '': -1.5e-7 }] as JsonValue[]) {
      const hash = await argumentsHash(value)
      expect(isArgumentsHash(hash)).toBe(true)
      expect(hash).toBe(await sha256(sortedJson(value)))
    }
  })

  it('does not depend on key order, and tells apart values that differ anywhere', async () => {
    const a = await argumentsHash({ path: 'notes/two.md', content: { lines: ['a', 'b'], mode: 1 } })
    expect(await argumentsHash({ content: { mode: 1, lines: ['a', 'b'] }, path: 'notes/two.md' })).toBe(a)
    expect(await argumentsHash({ content: { mode: 1, lines: ['a', 'b '] }, path: 'notes/two.md' })).not.toBe(a)
    expect(await argumentsHash({ path: 'src/index.ts', content: { lines: ['a', 'b'], mode: 1 } })).not.toBe(a)
    // A string is not its JSON text, an array is not its items spread.
    expect(await argumentsHash('[1]')).not.toBe(await argumentsHash([1]))
  })

  it('hashes large and deep arguments (megabytes of text, a surrogate pair on a slice edge, 100,000 levels)', async () => {
    const long = 'x'.repeat(32 * 1024 - 1) + '😀' + 'y'.repeat(3 * 1024 * 1024)
    const h1 = await argumentsHash({ content: long })
    expect(await argumentsHash({ content: `${long}` })).toBe(h1)
    expect(await argumentsHash({ content: long.replace('😀', '😁') })).not.toBe(h1)
    let deep: JsonValue = 'leaf'
    for (let i = 0; i < 100_000; i++) deep = i % 2 === 0 ? [deep] : { k: deep }
    expect(isArgumentsHash(await argumentsHash(deep))).toBe(true)
  })
})
