import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { hasSdkRenderer, renderToolsSdk, type SdkToolInput } from '../../../src/code-mode/sdk.js'
import { renderTypeScriptSdkBlock } from '../../../src/code-mode/sdk-typescript.js'
import { renderPythonSdkBlock } from '../../../src/code-mode/sdk-python.js'

const tools: SdkToolInput[] = [
  { name: 'b', description: 'B', parameters: { type: 'object', properties: { x: { type: 'string' } }, required: ['x'] }, output: { type: 'number' } },
  { name: 'a-b', description: 'A', parameters: { type: 'object' }, output: {} },
]

describe('renderToolsSdk', () => {
  it('renders TypeScript by default: the instructions, then the fenced SDK block', () => {
    const text = renderToolsSdk(tools)
    expect(text.startsWith('## Writing code for run_code\n')).toBe(true)
    expect(text).toContain('The available tools:\n\n```ts\n')
    expect(text).toContain(renderTypeScriptSdkBlock(tools))
    expect(text.indexOf('## Writing code')).toBeLessThan(text.indexOf('declare const tools'))
    expect(renderToolsSdk(tools, { language: 'typescript' })).toBe(text)
    expect(renderToolsSdk(tools, {})).toBe(text)
  })

  it('tells the model the truth about the runtime', () => {
    const text = renderToolsSdk(tools)
    for (const claim of [
      'body of an async TypeScript function',
      'erasable syntax only',
      '`enum`',
      '`namespace`',
      '`description`',
      'lossless JSON',
      'ToolCallError',
      '`toolName`',
      'Promise.all',
      'in the order you made them',
      'console.log',
      'ONLY what you print or return comes back',
      'Reach the outside world only through `tools`',
      'tools["my-tool"](args)',
      'passes `{}`',
    ]) {
      expect(text).toContain(claim)
    }
  })

  it('renders Python with Python-flavoured instructions', () => {
    const text = renderToolsSdk(tools, { language: 'python' })
    expect(text).toContain('body of an async Python function')
    expect(text).toContain('print(...)')
    expect(text).toContain('await tools["my-tool"](args)')
    expect(text).toContain('`tool_name`')
    expect(text).toContain('```python\n')
    expect(text).toContain(renderPythonSdkBlock(tools))
    expect(text).not.toContain('declare const tools')
  })

  it('is byte-identical across calls and input orders', () => {
    for (const language of ['typescript', 'python']) {
      expect(renderToolsSdk([...tools].reverse(), { language })).toBe(renderToolsSdk(tools, { language }))
    }
  })

  it.each(['javascript', 'Python', '', 'constructor', '__proto__', 'toString'])('throws ASSEMBLY_FAILED for language %j', (language) => {
    expect(hasSdkRenderer(language)).toBe(false)
    let caught: unknown
    try {
      renderToolsSdk(tools, { language })
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(ToolError)
    expect((caught as ToolError).code).toBe('ASSEMBLY_FAILED')
    expect((caught as ToolError).message).toContain(JSON.stringify(language))
  })

  it('knows its renderers', () => {
    expect(hasSdkRenderer('typescript')).toBe(true)
    expect(hasSdkRenderer('python')).toBe(true)
    expect(hasSdkRenderer(42 as unknown as string)).toBe(false)
  })

  it('renders an empty tool set', () => {
    expect(renderToolsSdk([])).toContain('declare const tools: {\n};')
    expect(renderToolsSdk([], { language: 'python' })).toContain('class Tools:\n    pass')
  })

  it('never throws for garbage schemas in any renderer', () => {
    const garbage = [
      { name: 'g', description: 7, parameters: 'nope', output: [1, 2] },
      { name: 'h', description: null, parameters: { type: 'object', properties: { a: { get type(): never { throw new Error('x') } } } }, output: null },
    ] as unknown as SdkToolInput[]
    expect(renderToolsSdk(garbage)).toContain('g(args: ToolArgsMap["g"])')
    expect(renderToolsSdk(garbage, { language: 'python' })).toContain('async def g(self, args: Any) -> Any:')
  })
})
