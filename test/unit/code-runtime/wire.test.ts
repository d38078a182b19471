/**
 * The wire protocol's host-side checks as units: which sandbox messages parse (and to
 * what), which are refused (and why), and which names a binding namespace may take.
 */
import { describe, expect, it } from 'vitest'
import { MAX_ERROR_TEXT, RESERVED_GLOBALS, invalidGlobalName, parseWorkerMessage } from '../../../src/code-runtime/wire.js'

const refused = (data: unknown) => {
  const parsed = parseWorkerMessage(data)
  return parsed.ok ? undefined : parsed.reason
}

describe('parseWorkerMessage: accepted shapes', () => {
  it('ready', () => {
    expect(parseWorkerMessage({ type: 'ready' })).toEqual({ ok: true, message: { type: 'ready' } })
    expect(parseWorkerMessage(Object.assign(Object.create(null), { type: 'ready' }))).toEqual({ ok: true, message: { type: 'ready' } })
  })

  it('log, at every level', () => {
    for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
      expect(parseWorkerMessage({ type: 'log', source: 'console', level, text: 't' })).toEqual({ ok: true, message: { type: 'log', source: 'console', level, text: 't' } })
    }
  })

  it('call, with any args', () => {
    expect(parseWorkerMessage({ type: 'call', id: 1, global: 'tools', name: 'x', args: { a: [1] } })).toEqual({
      ok: true,
      message: { type: 'call', id: 1, global: 'tools', name: 'x', args: { a: [1] } },
    })
    expect(parseWorkerMessage({ type: 'call', id: Number.MAX_SAFE_INTEGER, global: 'g', name: 'n', args: undefined })).toMatchObject({ ok: true })
  })

  it('done with a value, a rendered value, an oversized rendering, or nothing', () => {
    expect(parseWorkerMessage({ type: 'done' })).toEqual({ ok: true, message: { type: 'done' } })
    expect(parseWorkerMessage({ type: 'done', value: 0 })).toEqual({ ok: true, message: { type: 'done', value: 0 } })
    expect(parseWorkerMessage({ type: 'done', value: undefined })).toEqual({ ok: true, message: { type: 'done' } })
    expect(parseWorkerMessage({ type: 'done', value: 'r', rendered: true })).toEqual({ ok: true, message: { type: 'done', value: 'r', rendered: true } })
    expect(parseWorkerMessage({ type: 'done', value: 'r', rendered: true, oversized: true })).toEqual({
      ok: true,
      message: { type: 'done', value: 'r', rendered: true, oversized: true },
    })
  })

  it('done with an error, its texts cut at MAX_ERROR_TEXT', () => {
    expect(parseWorkerMessage({ type: 'done', error: { name: 'E', message: 'm' } })).toEqual({ ok: true, message: { type: 'done', error: { name: 'E', message: 'm' } } })
    expect(parseWorkerMessage({ type: 'done', error: { name: 'E', message: 'm', stack: 's' } })).toEqual({
      ok: true,
      message: { type: 'done', error: { name: 'E', message: 'm', stack: 's' } },
    })
    const long = 'x'.repeat(MAX_ERROR_TEXT + 1)
    const exact = 'y'.repeat(MAX_ERROR_TEXT)
    expect(parseWorkerMessage({ type: 'done', error: { name: long, message: exact, stack: long } })).toEqual({
      ok: true,
      message: { type: 'done', error: { name: `${'x'.repeat(MAX_ERROR_TEXT)}…`, message: exact, stack: `${'x'.repeat(MAX_ERROR_TEXT)}…` } },
    })
    expect(MAX_ERROR_TEXT).toBe(16_384)
  })
})

describe('parseWorkerMessage: refused shapes, with the reason', () => {
  it('anything but a plain object', () => {
    for (const data of [null, undefined, 1, 'ready', [{ type: 'ready' }], new (class Ready { type = 'ready' })(), new Map()]) {
      expect(refused(data)).toBe('not a plain object')
    }
  })

  it('unknown or missing tags', () => {
    expect(refused({ type: 'reply' })).toBe('unknown message type')
    expect(refused({})).toBe('unknown message type')
    expect(refused(Object.create({ type: 'ready' }))).toBe('not a plain object')
    expect(refused(Object.assign(Object.create(null), { kind: 'ready' }))).toBe('unknown message type')
  })

  it('ready with anything more', () => {
    expect(refused({ type: 'ready', extra: 1 })).toBe('malformed ready')
  })

  it('log with a wrong key set or wrong field types', () => {
    expect(refused({ type: 'log', source: 'console', level: 'log' })).toBe('malformed log')
    expect(refused({ type: 'log', source: 'console', level: 'log', text: 't', more: 1 })).toBe('malformed log')
    expect(refused({ type: 'log', source: 'stdout', level: 'log', text: 't' })).toBe('log source must be console')
    expect(refused({ type: 'log', source: 'console', level: 'trace', text: 't' })).toBe('unknown log level')
    expect(refused({ type: 'log', source: 'console', level: 1, text: 't' })).toBe('unknown log level')
    expect(refused({ type: 'log', source: 'console', level: 'log', text: 1 })).toBe('log text must be a string')
  })

  it('call with a wrong key set, a bad id, or names that are not strings', () => {
    expect(refused({ type: 'call', id: 1, global: 'g', name: 'n' })).toBe('malformed call')
    // Five keys, one of them unknown; six keys; an unknown key in place of each known one.
    expect(refused({ type: 'call', id: 1, global: 'g', name: 'n', extra: null })).toBe('malformed call')
    expect(refused({ type: 'call', id: 1, global: 'g', name: 'n', args: null, extra: null })).toBe('malformed call')
    for (const key of ['id', 'global', 'name', 'args']) {
      const message: Record<string, unknown> = { type: 'call', id: 1, global: 'g', name: 'n', args: null }
      delete message[key]
      message[`${key}s`] = null
      expect(refused(message), key).toBe('malformed call')
    }
    for (const id of [0, -1, 1.5, '1', Number.MAX_SAFE_INTEGER + 1, Number.NaN]) {
      expect(refused({ type: 'call', id, global: 'g', name: 'n', args: null })).toBe('call id must be a positive safe integer')
    }
    expect(refused({ type: 'call', id: 1, global: 1, name: 'n', args: null })).toBe('call global and name must be strings')
    expect(refused({ type: 'call', id: 1, global: 'g', name: null, args: null })).toBe('call global and name must be strings')
  })

  it('done with a malformed error', () => {
    expect(refused({ type: 'done', error: { name: 'E', message: 'm' }, value: 1 })).toBe('malformed done')
    expect(refused({ type: 'done', error: 'E: m' })).toBe('malformed done error')
    expect(refused({ type: 'done', error: [] })).toBe('malformed done error')
    expect(refused({ type: 'done', error: { name: 'E' } })).toBe('malformed done error')
    expect(refused({ type: 'done', error: { name: 'E', message: 'm', cause: 'c' } })).toBe('malformed done error')
    expect(refused({ type: 'done', error: { name: 1, message: 'm' } })).toBe('error name and message must be strings')
    expect(refused({ type: 'done', error: { name: 'E', message: null } })).toBe('error name and message must be strings')
    expect(refused({ type: 'done', error: { name: 'E', message: 'm', stack: 3 } })).toBe('error stack must be a string')
  })

  it('done with a malformed value', () => {
    expect(refused({ type: 'done', value: 1, extra: true })).toBe('malformed done')
    expect(refused({ type: 'done', value: 'r', rendered: false })).toBe('done rendered must be true')
    expect(refused({ type: 'done', value: 'r', rendered: 'yes' })).toBe('done rendered must be true')
    expect(refused({ type: 'done', value: 'r', oversized: true })).toBe('done oversized must be true and come with rendered')
    expect(refused({ type: 'done', value: 'r', rendered: true, oversized: 1 })).toBe('done oversized must be true and come with rendered')
    expect(refused({ type: 'done', value: 1, rendered: true })).toBe('a rendered value must be a string')
  })

  it('accessors and symbol keys, without running the accessor', () => {
    let ran = false
    const withGetter = { type: 'log', source: 'console', level: 'log', get text() {
      ran = true
      return 't'
    } }
    expect(refused(withGetter)).toBe('malformed log')
    expect(ran).toBe(false)
    expect(refused({ type: 'ready', [Symbol('s')]: 1 })).toBe('malformed ready')
    const symbolOnly = { type: 'log', source: 'console', level: 'log', [Symbol('text')]: 't' }
    expect(refused(symbolOnly)).toBe('malformed log')
    const errorGetter = { type: 'done', error: { name: 'E', get message() {
      ran = true
      return 'm'
    } } }
    expect(refused(errorGetter)).toBe('malformed done error')
    expect(ran).toBe(false)
    // A call, the message validated once per sub-call: each of its keys after its type, checked the same way.
    for (const key of ['id', 'global', 'name', 'args']) {
      const values: Record<string, unknown> = { type: 'call', id: 1, global: 'g', name: 'n', args: null }
      const message = Object.create(Object.prototype, {
        ...Object.fromEntries(Object.entries(values).map(([k, value]) => [k, { value, enumerable: true }])),
        [key]: {
          enumerable: true,
          get() {
            ran = true
            return values[key]
          },
        },
      }) as object
      expect(refused(message), key).toBe('malformed call')
    }
    expect(ran).toBe(false)
    expect(refused({ type: 'call', id: 1, global: 'g', name: 'n', [Symbol('args')]: null })).toBe('malformed call')
  })
})

describe('invalidGlobalName', () => {
  it('accepts identifiers that are neither reserved words nor runtime globals', () => {
    for (const name of ['tools', '_x', '$', 'a1', 'Tools_2', 'letter', 'classes']) expect(invalidGlobalName(name)).toBeUndefined()
  })

  it('refuses what is not an identifier', () => {
    for (const name of ['', '1a', 'a-b', 'a b', 'é', ' tools', 'tools\n']) {
      expect(invalidGlobalName(name)).toBe(`binding global ${JSON.stringify(name)} is not a JavaScript identifier`)
    }
    expect(invalidGlobalName(7)).toBe('binding global 7 is not a JavaScript identifier')
    expect(invalidGlobalName(undefined)).toBe('binding global undefined is not a JavaScript identifier')
  })

  it('refuses every reserved word', () => {
    const words =
      'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await async'
    for (const word of words.split(' ')) expect(invalidGlobalName(word)).toBe(`binding global "${word}" is a reserved word`)
  })

  it('refuses the globals a program needs', () => {
    const globals = ['console', 'ToolCallError', 'globalThis', 'self', 'window', 'global', 'process', 'Promise', 'Object', 'Function', 'undefined', 'NaN', 'Infinity', 'eval', 'arguments']
    expect([...RESERVED_GLOBALS].sort()).toEqual([...globals].sort())
    for (const name of globals) expect(invalidGlobalName(name)).toBe(`binding global "${name}" is reserved by the runtime`)
  })
})
