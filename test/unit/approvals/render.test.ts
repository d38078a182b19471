/**
 * `renderApprovalArguments`: the one rendering every approval surface shows. Declared
 * parameters in schema order, long values as length + head + tail, undeclared keys
 * flagged and listed last, nothing dropped without saying so, escaped so a value cannot
 * forge a line, and bounded by bytes and work whatever the arguments. Platform-neutral.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DEFAULT_APPROVAL_RENDER_BYTES, renderApprovalArguments, undeclaredArgumentPaths } from '../../../src/approvals/index.js'

const WRITE = {
  name: 'write_file',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' }, mode: { type: 'string' } },
    required: ['path', 'content'],
  },
}

const bytes = (text: string): number => new TextEncoder().encode(text).length

describe('renderApprovalArguments', () => {
  it('walks the declared parameters in schema order, whatever the caller\'s key order; absent ones say so', () => {
    const { text, undeclared, complete } = renderApprovalArguments(WRITE, { content: 'hello', path: 'a.ts' })
    expect(text).toBe('path: "a.ts"\ncontent: "hello"\nmode: (not given)')
    expect(undeclared).toEqual([])
    expect(complete).toBe(true)
  })

  it('shows a long string as its length, head and tail (never silently cut)', () => {
    const content = `${'a'.repeat(1000)}MIDDLE${'b'.repeat(1000)}THE END`
    const { text, complete } = renderApprovalArguments(WRITE, { path: 'a.ts', content })
    const line = text.split('\n')[1]!
    expect(line).toBe(`content: string of ${content.length} characters: "${'a'.repeat(120)}" … [${content.length - 240} characters not shown] … "${'b'.repeat(113)}THE END"`)
    expect(complete).toBe(false)
  })

  it('lists undeclared keys after the declared ones, flagged, and announces them on the first line', () => {
    const decoy = 'harmless '.repeat(1000)
    const { text, undeclared, undeclaredCount } = renderApprovalArguments(WRITE, { note: decoy, [`k${'e'.repeat(500)}y`]: 1, path: 'src/index.ts', content: 'evil()' })
    const lines = text.split('\n')
    expect(lines[0]).toBe('⚠ 2 undeclared keys (not parameters of write_file), listed last')
    expect(lines.slice(1, 4)).toEqual(['path: "src/index.ts"', 'content: "evil()"', 'mode: (not given)'])
    expect(lines[4]).toMatch(/^⚠ undeclared note: string of 9000 characters: "harmless /)
    expect(lines[5]).toMatch(/^⚠ undeclared a key of 502 characters: "ke+" … \[262 characters not shown\] … "e+y": 1$/)
    expect(undeclaredCount).toBe(2)
    expect(undeclared).toEqual(['note', `k${'e'.repeat(39)}…(502 characters)`])
  })

  it('escapes what could forge a line or reorder text: newlines, controls, bidi and zero-width characters, quotes', () => {
    const { text } = renderApprovalArguments(WRITE, { path: 'a.ts\npath: "safe.ts"', content: 'x\u202e\u200b\u0007"\\' })
    expect(text.split('\n')).toEqual(['path: "a.ts\\npath: \\"safe.ts\\""', 'content: "x\\u202e\\u200b\\u0007\\"\\\\"', 'mode: (not given)'])
  })

  it('walks nested declared objects and arrays, flags nested undeclared keys, and counts what it leaves out', () => {
    const tool = {
      name: 'send',
      parameters: {
        type: 'object',
        properties: {
          to: { type: 'array', items: { type: 'string' } },
          options: { type: 'object', properties: { cc: { type: 'string' } }, additionalProperties: false },
        },
      },
    }
    const to = Array.from({ length: 25 }, (_, i) => `user${i}@example.com`)
    const { text } = renderApprovalArguments(tool, { options: { hidden: true, cc: 'boss@example.com' }, to })
    const lines = text.split('\n')
    expect(lines[0]).toBe('to: array of 25 items')
    expect(lines[1]).toBe('  [0]: "user0@example.com"')
    expect(lines[21]).toBe('  … 5 more items not shown')
    expect(lines.slice(22)).toEqual(['options: object with 2 keys (1 undeclared)', '  cc: "boss@example.com"', '  ⚠ undeclared hidden: true'])
  })

  it('without a schema every key is undeclared; a non-object is shown as one value', () => {
    expect(renderApprovalArguments({ name: 'raw' }, { a: 1 }).text).toBe('⚠ 1 undeclared key (not a parameter of raw), listed last\n⚠ undeclared a: 1')
    expect(renderApprovalArguments({ name: 'raw' }, 'text').text).toBe('arguments: "text"')
    expect(renderApprovalArguments(WRITE, {}).text).toBe('path: (not given)\ncontent: (not given)\nmode: (not given)')
    expect(renderApprovalArguments({ name: 'none', parameters: { type: 'object', properties: {} } }, {}).text).toBe('(no arguments)')
  })

  it('gives each top-level parameter its share: a huge first value cannot push the next out', () => {
    const deep = { path: 'a.ts', mode: 'w', content: 'ok' }
    const huge = { type: 'object', properties: { first: {}, path: { type: 'string' } } }
    const value = Array.from({ length: 20 }, () => ({ k: 'v'.repeat(300), nested: Array.from({ length: 20 }, () => 'w'.repeat(300)) }))
    const { text } = renderApprovalArguments({ name: 't', parameters: huge }, { first: value, path: deep.path })
    expect(text).toContain('path: "a.ts"')
    expect(text).toMatch(/… \d+ more entries of this value not shown \(the prompt's budget\)/)
    expect(bytes(text)).toBeLessThanOrEqual(DEFAULT_APPROVAL_RENDER_BYTES)
  })

  it('stays within its byte budget and work bound for any JSON arguments, and never throws', () => {
    const json = fc.jsonValue({ maxDepth: 8 })
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 300 }), json, { maxKeys: 60 }), fc.integer({ min: 0, max: 20_000 }), (args, maxBytes) => {
        const { text } = renderApprovalArguments(WRITE, args, { maxBytes })
        expect(bytes(text)).toBeLessThanOrEqual(Math.max(512, maxBytes))
      }),
      { numRuns: 300 },
    )
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))
    const { text, undeclaredCount } = renderApprovalArguments(WRITE, wide)
    expect(undeclaredCount).toBe(100_000)
    expect(text).toMatch(/… 999\d\d more undeclared keys not shown|more (parameters and keys|undeclared keys) not shown/)
    expect(bytes(text)).toBeLessThanOrEqual(DEFAULT_APPROVAL_RENDER_BYTES)
    let deep: unknown = 'bottom'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(renderApprovalArguments(WRITE, { path: 'a', content: deep }).text).toContain('deeper than 6 levels: not shown')
    const hostile = new Proxy({}, { ownKeys: () => { throw new Error('no') } })
    expect(renderApprovalArguments(WRITE, hostile).text).toBe('(the arguments could not be read)')
  })
})

describe('undeclaredArgumentPaths', () => {
  it('names the keys a declared object does not declare, at any depth, in order', () => {
    const parameters = {
      type: 'object',
      properties: { a: { type: 'object', properties: { b: {} } }, list: { type: 'array', items: { type: 'object', properties: { c: {} } } }, free: {} },
    }
    expect(undeclaredArgumentPaths(parameters, { x: 1, a: { b: 1, y: 2 }, list: [{ c: 1 }, { z: 3 }], free: { anything: 1 }, 'w/~': 0 })).toEqual([
      '/x',
      '/w~1~0',
      '/a/y',
      '/list/1/z',
    ])
  })

  it('accepts what the schema opens on purpose or declares through oneOf; a free-form root is not checked', () => {
    expect(undeclaredArgumentPaths({ type: 'object', properties: { a: {} }, additionalProperties: true }, { a: 1, b: 2 })).toEqual([])
    expect(undeclaredArgumentPaths({ type: 'object', oneOf: [{ properties: { a: {} } }, { properties: { b: {} } }] }, { a: 1, b: 2, c: 3 })).toEqual(['/c'])
    expect(undeclaredArgumentPaths({ type: 'object' }, { a: 1 })).toEqual([])
    expect(undeclaredArgumentPaths({ type: 'object', properties: {} }, { a: 1 })).toEqual(['/a'])
  })

  it('shortens a long key and stops at the limit', () => {
    const long = 'k'.repeat(10_000)
    expect(undeclaredArgumentPaths(WRITE.parameters, { [long]: 1 })).toEqual([`/${'k'.repeat(40)}…(10000 characters)`])
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]))
    expect(undeclaredArgumentPaths(WRITE.parameters, many, 3)).toEqual(['/k0', '/k1', '/k2'])
  })
})
