import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { defineTool } from '../../../src/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'

const sandbox = createSandboxRuntime({ language: 'python', computeMs: 5_000 })
const runtime = createToolRuntime({ mode: 'code', codeRuntime: sandbox })
runtime.register(
  defineTool({
    name: 'add',
    description: 'Adds two numbers.',
    parameters: { a: { type: 'number' }, b: { type: 'number' } },
    output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
    execute: (args) => (args.a ?? 0) + (args.b ?? 0),
  }),
)
afterAll(async () => {
  await runtime.dispose()
  await sandbox.dispose()
})

const runCode = (code: string) =>
  runtime.execute({ callId: `py-${Math.random()}`, name: 'run_code', arguments: { code, description: 'test' }, signal: new AbortController().signal })

describe('Python Code Mode through createToolRuntime', () => {
  it('presents the Python SDK and a run_code tool that says Python', () => {
    const assembly = runtime.assemble()
    const text = assembly.sections.map((section) => JSON.stringify(section)).join('\n')
    expect(text).toContain('async def add')
    expect(text).toContain('ToolCallError')
    const runCodeSchema = assembly.tools.find((tool) => tool.name === 'run_code')
    expect(JSON.stringify(runCodeSchema)).toContain('Python')
  })

  it('runs a Python program against registered tools', async () => {
    const result = await runCode('r = await tools.add({"a": 2, "b": 3})\nprint("sum", r)\nreturn r')
    expect(JSON.stringify(result)).toContain('sum 5')
    expect(result.isError ?? false).toBe(false)
  })

  it('raises ToolCallError with the tool name and code for invalid arguments', async () => {
    const result = await runCode('try:\n    await tools.add({"a": "x"})\nexcept ToolCallError as e:\n    return [e.tool_name, e.code]')
    expect(JSON.stringify(result)).toContain('INVALID_ARGS')
    expect(JSON.stringify(result)).toContain('add')
  })
})
