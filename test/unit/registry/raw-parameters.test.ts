import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { renderToolsSdk } from '../../../src/code-mode/sdk.js'
import { call, echoTool } from './helpers.js'

/**
 * Raw tools own their input validation (an MCP server, say), so their parameter schema
 * is presented as is even outside the enforced subset; typed tools validate against
 * theirs, so theirs must stay inside it. Output schemas are always enforced.
 */
describe('raw tool parameters', () => {
  const mcpStyle = {
    type: 'object',
    $schema: 'http://json-schema.org/draft-07/schema#',
    properties: {
      url: { type: 'string', format: 'uri', minLength: 1 },
      mode: { anyOf: [{ const: 'fast' }, { const: 'slow' }] },
    },
    required: ['url'],
  }

  it('registers a raw tool whose parameters use constructs outside the subset, presented unchanged', () => {
    const runtime = createToolRuntime()
    runtime.register({ ...echoTool('fetch_url'), parameters: mcpStyle as never })
    const [schema] = runtime.schemas()
    expect(schema?.parameters).toEqual(mcpStyle)
    expect(Object.isFrozen(schema?.parameters)).toBe(true)
  })

  it('executes it without validating the arguments against that schema (the tool owns validation)', async () => {
    const runtime = createToolRuntime()
    runtime.register({ ...echoTool('fetch_url'), parameters: mcpStyle as never })
    const result = await runtime.execute(call('fetch_url', { text: 'no url at all' }))
    expect(result).toMatchObject({ isError: false, value: 'no url at all' })
  })

  it('degrades the unsupported constructs in the SDK instead of failing assembly', () => {
    const text = renderToolsSdk([{ name: 'fetch_url', description: 'd', parameters: mcpStyle as never, output: { type: 'string' } }])
    expect(text).toContain('fetch_url')
    expect(text).toMatch(/mode\?: unknown/)
  })

  it('still rejects raw parameters that are not lossless JSON or not an object', () => {
    const runtime = createToolRuntime()
    expect(() => runtime.register({ ...echoTool('a'), parameters: { type: 'object', bad: undefined } as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_SCHEMA' }),
    )
    expect(() => runtime.register({ ...echoTool('b'), parameters: [] as never })).toThrow(expect.objectContaining({ code: 'INVALID_SCHEMA' }))
    expect(() => runtime.register({ ...echoTool('c'), parameters: { type: 'string' } as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_SCHEMA' }),
    )
  })

  it('still enforces the subset on output schemas of raw tools', () => {
    const runtime = createToolRuntime()
    const tool = echoTool('d')
    expect(() => runtime.register({ ...tool, output: { ...tool.output, schema: { type: 'string', format: 'uri' } } as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_SCHEMA' }),
    )
  })

  it('keeps the subset for typed tools: a defineTool spec cannot smuggle unsupported keywords', () => {
    expect(() =>
      defineTool({
        name: 't',
        description: 'd',
        parameters: { url: { type: 'string', format: 'uri' } as never },
        output: { schema: { type: 'string' }, render: () => [] },
        execute: () => '',
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_SCHEMA' }))
  })
})
