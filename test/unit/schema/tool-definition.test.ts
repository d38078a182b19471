import { describe, expect, it } from 'vitest'
import { defineTool } from '../../../src/schema/define-tool.js'
import { allowsCaller, detachToolDefinition, readToolDefinition } from '../../../src/schema/tool-definition.js'
import { thrownCode as codeOf } from '../registry/helpers.js'
import { SchemaError, ToolError } from '../../../src/errors.js'
import { refusalMessage } from '../../support/refusal.js'

const raw = () => ({
  name: 'echo',
  description: 'echo',
  parameters: { type: 'object', properties: { text: { type: 'string' } } },
  output: { schema: { type: 'string' }, render: (_a: unknown, v: string) => [{ type: 'text' as const, text: v }] },
  execute: () => 'x',
})

describe('the one definition validator (defineTool and register share it)', () => {
  it.each([
    ['not an object', () => 1],
    ['no name', (d: Record<string, unknown>) => ({ ...d, name: '' })],
    ['a non-string description', (d: Record<string, unknown>) => ({ ...d, description: 1 })],
    ['no output declaration', (d: Record<string, unknown>) => ({ ...d, output: undefined })],
    ['no output.schema', (d: Record<string, unknown>) => ({ ...d, output: { render: () => [] } })],
    ['a non-function presentCall', (d: Record<string, unknown>) => ({ ...d, presentCall: 'x' })],
    ['a zero timeoutMs', (d: Record<string, unknown>) => ({ ...d, timeoutMs: 0 })],
  ])('refuses %s with INVALID_DEFINITION, through both entries', (_label, patch) => {
    const bad = (patch as (d: Record<string, unknown>) => unknown)(raw())
    expect(codeOf(() => readToolDefinition(bad))).toBe('INVALID_DEFINITION')
    expect(codeOf(() => detachToolDefinition(bad))).toBe('INVALID_DEFINITION')
    expect(codeOf(() => defineTool(bad as never))).toBe('INVALID_DEFINITION')
  })

  it('refuses an accessor without running it, and turns a throwing Proxy trap into INVALID_DEFINITION', () => {
    let ran = false
    const accessor = Object.defineProperty(raw(), 'execute', { enumerable: true, get: () => ((ran = true), () => 'x') })
    expect(codeOf(() => detachToolDefinition(accessor))).toBe('INVALID_DEFINITION')
    expect(ran).toBe(false)
    const trap = new Proxy(raw(), { getOwnPropertyDescriptor: () => { throw new Error('trap') } })
    expect(() => readToolDefinition(trap)).toThrow(expect.objectContaining({ code: 'INVALID_DEFINITION', message: expect.stringContaining('could not be read (trap)') }))
  })

  it('finds methods on a class instance’s prototype', () => {
    class Echo {
      readonly name = 'echo'
      readonly description = 'echo'
      readonly parameters = { type: 'object' }
      readonly output = { schema: { type: 'string' }, render: () => [] }
      execute(): string {
        return 'x'
      }
    }
    expect(typeof detachToolDefinition(new Echo()).definition.execute).toBe('function')
  })

  it('detaches: a frozen copy the author can no longer change', () => {
    const authored = raw()
    const { definition, validateOutput } = detachToolDefinition(authored)
    authored.parameters.properties.text.type = 'number'
    authored.output.schema.type = 'number'
    expect(definition.parameters).toEqual({ type: 'object', properties: { text: { type: 'string' } } })
    expect(Object.isFrozen(definition.parameters.properties)).toBe(true)
    expect(validateOutput('ok')).toEqual([])
    expect(validateOutput(1)).toHaveLength(1)
  })

  it('a raw tool may present parameters outside the subset; a typed one (validateArgs) may not', () => {
    const parameters = { type: 'object', properties: { a: { $ref: '#/x' } } }
    expect(detachToolDefinition({ ...raw(), parameters }).definition.parameters).toEqual(parameters)
    expect(codeOf(() => detachToolDefinition({ ...raw(), parameters, validateArgs: (a: unknown) => a }))).toBe('INVALID_SCHEMA')
    expect(codeOf(() => detachToolDefinition({ ...raw(), parameters: { type: 'string' } }))).toBe('INVALID_SCHEMA')
  })
})

/*
 * The definition validator as a unit: every refusal with its message, what a detached
 * registration keeps (and freezes), and how raw and typed parameters differ.
 */
const render = () => [{ type: 'text' as const, text: '' }]
const execute = () => null
const base = () => ({
  name: 't',
  description: 'd',
  parameters: { type: 'object', properties: {} },
  output: { schema: { type: 'null' }, render },
  execute,
})

function refusal(input: unknown, read = readToolDefinition): string | undefined {
  return refusalMessage('INVALID_DEFINITION', () => read(input))
}

describe('readToolDefinition: refusals', () => {
  it('not an object, or no name', () => {
    for (const input of [null, 'tool', [], 3]) expect(refusal(input)).toBe('a tool definition must be an object')
    expect(refusal({ ...base(), name: '' })).toBe('a tool definition needs a non-empty string name')
    expect(refusal({ ...base(), name: 7 })).toBe('a tool definition needs a non-empty string name')
  })

  it('each required member, named with the tool', () => {
    expect(refusal({ ...base(), description: undefined })).toBe('tool "t": description must be a string')
    expect(refusal({ ...base(), execute: 'run' })).toBe('tool "t": execute must be a function')
    expect(refusal({ ...base(), output: undefined })).toBe('tool "t": the output declaration { schema, render } is missing')
    expect(refusal({ ...base(), output: null })).toBe('tool "t": the output declaration { schema, render } is missing')
    expect(refusal({ ...base(), output: { schema: {} } })).toBe('tool "t": output.render must be a function')
    expect(refusal({ ...base(), output: { schema: {}, render, presentationMeta: 1 } })).toBe('tool "t": output.presentationMeta must be a function when present')
    expect(refusal({ ...base(), output: { render } })).toBe('tool "t": output.schema is missing')
  })

  it('timeoutMs must be a positive finite number', () => {
    for (const timeoutMs of [0, -1, Number.POSITIVE_INFINITY, Number.NaN, '10']) {
      expect(refusal({ ...base(), timeoutMs })).toBe(`tool "t": timeoutMs must be a positive finite number (got ${String(timeoutMs)})`)
    }
    expect(readToolDefinition({ ...base(), timeoutMs: 0.5 }).timeoutMs).toBe(0.5)
  })

  it('each optional callback must be a function when present', () => {
    for (const key of ['validateArgs', 'softValidateArgs', 'finalizeContent', 'presentCall', 'presentResult', 'isConcurrencySafe']) {
      expect(refusal({ ...base(), [key]: true })).toBe(`tool "t": ${key} must be a function when present`)
    }
  })

  it('accessors are refused unread, anywhere on the chain; a throwing read fails as INVALID_DEFINITION', () => {
    let ran = false
    const withGetter = Object.defineProperty(base(), 'description', { get: () => ((ran = true), 'd'), enumerable: true })
    expect(refusal(withGetter)).toBe('tool "t": description must be a data property, not an accessor')
    const outputGetter = { ...base(), output: Object.defineProperty({ schema: {} }, 'render', { get: () => render }) }
    expect(refusal(outputGetter)).toBe('tool "t": output.render must be a data property, not an accessor')
    const nameGetter = Object.defineProperty({}, 'name', { get: () => 't' })
    expect(refusal(nameGetter)).toBe('name must be a data property, not an accessor')
    expect(ran).toBe(false)
    const trap = new Proxy(base(), {
      getOwnPropertyDescriptor(target, key) {
        if (key === 'execute') throw new Error('trap fired')
        return Reflect.getOwnPropertyDescriptor(target, key)
      },
    })
    expect(refusal(trap)).toBe('tool "t": execute could not be read (trap fired)')
    const odd = new Proxy(base(), {
      getOwnPropertyDescriptor(target, key) {
        if (key === 'description') throw 'odd'
        return Reflect.getOwnPropertyDescriptor(target, key)
      },
    })
    expect(refusal(odd)).toBe('tool "t": description could not be read (odd)')
  })

  it('idempotent must be a boolean; callers a non-empty array of distinct native / code entries, read as data', () => {
    expect(refusal({ ...base(), idempotent: 'yes' })).toBe('tool "t": idempotent must be a boolean (got string)')
    expect(readToolDefinition({ ...base(), idempotent: true }).idempotent).toBe(true)
    expect(readToolDefinition({ ...base(), idempotent: false }).idempotent).toBe(false)
    const expected = `tool "t": callers must be a non-empty array of distinct 'native' / 'code'`
    expect(refusal({ ...base(), callers: [] })).toBe(`${expected} (got [])`)
    expect(refusal({ ...base(), callers: 'code' })).toBe(`${expected} (got "code")`)
    expect(refusal({ ...base(), callers: 5 })).toBe(`${expected} (got 5)`)
    expect(refusal({ ...base(), callers: ['code', 'native', 'code'] })).toBe(`${expected} (got ["code","native","code"])`)
    expect(refusal({ ...base(), callers: ['code', 'code'] })).toBe(`${expected} (entry 1 is "code")`)
    expect(refusal({ ...base(), callers: ['model'] })).toBe(`${expected} (entry 0 is "model")`)
    expect(refusal({ ...base(), callers: [1] })).toBe(`${expected} (entry 0 is 1)`)
    // A hole and an accessor are refused like a bad entry; the accessor never runs.
    // eslint-disable-next-line no-sparse-arrays
    expect(refusal({ ...base(), callers: [, 'code'] })).toBe(`${expected} (entry 0 is not a string)`)
    let ran = false
    const accessor = Object.defineProperty(['native'], 0, { get: () => ((ran = true), 'code') })
    expect(refusal({ ...base(), callers: accessor })).toBe(`${expected} (entry 0 is not a string)`)
    expect(ran).toBe(false)
    // Both callers (as many as there are), in the order given, as a frozen copy.
    const both = ['code', 'native']
    const callers = readToolDefinition({ ...base(), callers: both }).callers
    expect(callers).toEqual(['code', 'native'])
    expect(callers).not.toBe(both)
    expect(Object.isFrozen(callers)).toBe(true)
    expect(readToolDefinition({ ...base(), callers: ['native'] }).callers).toEqual(['native'])
    expect(readToolDefinition(base()).callers).toBeUndefined()
  })
})

describe('readToolDefinition: what it reads', () => {
  it('reads members from a class instance’s prototype, never from Object.prototype', () => {
    class Tool {
      name = 'cls'
      description = 'from a class'
      parameters = { type: 'object' }
      output = { schema: { type: 'null' }, render }
      execute() {
        return null
      }
      isConcurrencySafe() {
        return true
      }
    }
    const members = readToolDefinition(new Tool())
    expect(members.name).toBe('cls')
    expect(members.execute).toBe(Tool.prototype.execute)
    expect(Object.keys(members.functions)).toEqual(['isConcurrencySafe'])
    // `toString` and friends on Object.prototype are never members.
    expect(readToolDefinition({ ...base() }).functions).toEqual({})
  })

  it('returns every member as read', () => {
    const validateArgs = () => ({ ok: true as const, value: {} })
    const presentationMeta = () => null
    const def = { ...base(), timeoutMs: 5, validateArgs, output: { schema: { type: 'null' }, render, presentationMeta } }
    const members = readToolDefinition(def)
    expect(members).toEqual({
      name: 't',
      description: 'd',
      parameters: def.parameters,
      output: def.output,
      outputSchema: { type: 'null' },
      render,
      presentationMeta,
      execute,
      timeoutMs: 5,
      idempotent: false,
      functions: { validateArgs },
    })
    expect(readToolDefinition(base()).presentationMeta).toBeUndefined()
  })

  it('allowsCaller: a tool without callers allows both; one with callers, only those it names', () => {
    expect([allowsCaller({}, 'native'), allowsCaller({}, 'code')]).toEqual([true, true])
    expect([allowsCaller({ callers: ['code'] }, 'native'), allowsCaller({ callers: ['code'] }, 'code')]).toEqual([false, true])
    expect([allowsCaller({ callers: ['native'] }, 'native'), allowsCaller({ callers: ['native'] }, 'code')]).toEqual([true, false])
  })
})

describe('detachToolDefinition', () => {
  it('keeps a frozen, detached copy: later edits to the author’s object change nothing', () => {
    const def = { ...base(), timeoutMs: 9, isConcurrencySafe: () => true, output: { schema: { type: 'object', properties: { a: { type: 'string' } } }, render } }
    const { definition, validateOutput } = detachToolDefinition(def)
    def.output.schema.properties.a.type = 'number'
    def.description = 'changed'
    expect(definition.description).toBe('d')
    expect(definition.output.schema).toEqual({ type: 'object', properties: { a: { type: 'string' } } })
    expect(Object.isFrozen(definition) && Object.isFrozen(definition.output)).toBe(true)
    expect(definition.timeoutMs).toBe(9)
    expect(typeof definition.isConcurrencySafe).toBe('function')
    expect(Object.hasOwn(definition.output, 'presentationMeta')).toBe(false)
    expect(validateOutput({ a: 'x' })).toEqual([])
    expect(validateOutput({ a: 1 }).length).toBeGreaterThan(0)
    const noTimeout = detachToolDefinition(base()).definition
    expect(Object.hasOwn(noTimeout, 'timeoutMs')).toBe(false)
    const meta = () => null
    expect(detachToolDefinition({ ...base(), output: { schema: { type: 'null' }, render, presentationMeta: meta } }).definition.output.presentationMeta).toBe(meta)
  })

  it('a raw tool may present any lossless object schema; a typed one must stay in the subset', () => {
    const raw = { ...base(), parameters: { type: 'object', properties: { a: { type: 'string', format: 'custom-thing', 'x-extension': [1] } } } }
    let rawError: unknown
    try {
      detachToolDefinition({ ...base(), parameters: { type: 'object', properties: { a: { not: {} } } }, validateArgs: () => ({ ok: true, value: {} }) })
    } catch (error) {
      rawError = error
    }
    expect(rawError).toBeInstanceOf(SchemaError)
    expect((rawError as Error).message).toMatch(/^tool "t" parameters: /)
    expect(detachToolDefinition({ ...base(), parameters: { type: 'object', properties: { a: { not: {} } } } }).definition.parameters).toEqual({ type: 'object', properties: { a: { not: {} } } })
    expect(() => detachToolDefinition(raw)).not.toThrow()
  })

  it('the parameters root must be an object schema, and a raw schema lossless JSON', () => {
    const messageOf = (parameters: unknown) => {
      try {
        detachToolDefinition({ ...base(), parameters })
      } catch (error) {
        return [(error as ToolError).code, (error as Error).message]
      }
      return undefined
    }
    expect(messageOf({ type: 'string' })).toEqual(['INVALID_SCHEMA', `tool "t" parameters: the root must be { type: 'object' } at the schema root`])
    expect(messageOf({ type: 'object', properties: { a: { not: {}, bad: undefined } } })?.[0]).toBe('INVALID_SCHEMA')
    expect(messageOf({ type: 'object', properties: { a: { not: {}, bad: undefined } } })?.[1]).toMatch(/^tool "t" parameters: a raw parameter schema must be lossless JSON/)
    expect(messageOf([{ not: {} }])?.[1]).toMatch(/^tool "t" parameters: /)
  })

  it('names the output schema’s role when it is outside the subset', () => {
    try {
      detachToolDefinition({ ...base(), output: { schema: { type: 'object', not: {} }, render } })
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(SchemaError)
      expect((error as Error).message).toMatch(/^tool "t" output\.schema: /)
    }
  })

  it('keeps idempotent and callers only when declared', () => {
    const declared = detachToolDefinition({ ...base(), idempotent: true, callers: ['code'] }).definition
    expect([declared.idempotent, declared.callers]).toEqual([true, ['code']])
    for (const plain of [detachToolDefinition(base()).definition, detachToolDefinition({ ...base(), idempotent: false }).definition]) {
      expect([Object.hasOwn(plain, 'idempotent'), Object.hasOwn(plain, 'callers')]).toEqual([false, false])
    }
  })

  it('a schema failure names the tool and the role once, keeps its path, and carries the original as its cause', () => {
    const failure = (patch: Record<string, unknown>) => {
      try {
        detachToolDefinition({ ...base(), ...patch })
      } catch (error) {
        return error as SchemaError
      }
      return expect.unreachable()
    }
    const nested = failure({ output: { schema: { type: 'object', properties: { a: { type: 'object', not: {} } } }, render } })
    expect([nested.code, nested.path, nested.message]).toEqual(['INVALID_SCHEMA', '/properties/a', 'tool "t" output.schema: unsupported keyword "not" at /properties/a'])
    expect(nested.cause).toBeInstanceOf(SchemaError)
    expect((nested.cause as SchemaError).message).toBe('unsupported keyword "not" at /properties/a')
    const root = failure({ output: { schema: { type: 'object', not: {} }, render } })
    expect([root.path, root.message]).toEqual(['', 'tool "t" output.schema: unsupported keyword "not" at the schema root'])
    // A raw parameter schema: the root must be an object; lossless JSON, failing at the exact path.
    for (const parameters of [[{ not: {} }], 'x', null]) {
      expect(failure({ parameters }).message).toBe('tool "t" parameters: a parameter schema must be an object at the schema root')
    }
    const lossy = failure({ parameters: { type: 'object', properties: { a: { not: {}, n: -0 } } } })
    expect([lossy.path, lossy.message]).toEqual(['/properties/a/n', 'tool "t" parameters: a raw parameter schema must be lossless JSON at /properties/a/n'])
    expect((lossy.cause as SchemaError).cause).toBeInstanceOf(Error)
  })
})
