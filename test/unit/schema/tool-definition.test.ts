import { describe, expect, it } from 'vitest'
import { defineTool } from '../../../src/schema/define-tool.js'
import { detachToolDefinition, readToolDefinition } from '../../../src/schema/tool-definition.js'
import { thrownCode as codeOf } from '../registry/helpers.js'

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
