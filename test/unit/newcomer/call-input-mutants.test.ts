/**
 * Refusals of a call's input at their edges (mutation testing, stop 55):
 * - `run_code`'s arguments on a runtime that knows its language: its own language is taken, any
 *   other refused by name, and `code` is still required; a registry whose languages change is
 *   checked against the languages of the moment (the compiled schema is not kept past them);
 * - an execution input whose `arguments` member is spelt in another case (`Arguments`) is told
 *   so, and one with `arguments: undefined` is not told it "has arguments";
 * - `runToolCalls`' misspelt option is `INVALID_OPTIONS`, not merely a message.
 */
import { describe, expect, it } from 'vitest'
import { createRunCodeTool } from '../../../src/code-mode/run-code.js'
import { ToolArgsError } from '../../../src/errors.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { createToolRuntime, runToolCalls } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { createTestHost } from '../code-mode/support/test-host.js'

const signal = (): AbortSignal => AbortSignal.timeout(10_000)

describe('run_code arguments on a runtime that knows its language', () => {
  it('takes its own language, refuses another by name, and still requires code', async () => {
    const runtime = createToolRuntime({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const run = (args: Record<string, unknown>) => runtime.execute({ callId: 'c', name: 'run_code', arguments: args as never, signal: signal() })
    const own = await run({ code: 'return 1 + 1', description: 'adds', language: 'typescript' })
    expect(own.isError).toBe(false)
    const other = await run({ code: 'return 1', description: 'd', language: 'cobol' })
    expect(other.isError && other.error.info?.code).toBe('INVALID_ARGS')
    expect(other.isError && other.error.message).toContain('/language')
    expect(other.isError && other.error.message).toContain('"typescript"')
    const noCode = await run({ description: 'd', language: 'typescript' })
    expect(noCode.isError && noCode.error.info?.code).toBe('INVALID_ARGS')
    expect(noCode.isError && noCode.error.message).toContain('missing required property "code"')
    await runtime.dispose()
  })

  it('a registry whose languages change is checked against the languages of the moment', () => {
    let languages: readonly string[] = ['typescript']
    const host = { ...createTestHost({}, { runtime: createInProcessRuntime() }), languages: () => languages }
    const validate = createRunCodeTool(host).validateArgs as (args: JsonValue) => unknown
    const args = (language: string): JsonValue => ({ code: 'return 1', description: 'd', language })
    const refuses = (language: string): boolean => {
      try {
        validate(args(language))
        return false
      } catch (error) {
        expect(error).toBeInstanceOf(ToolArgsError)
        return true
      }
    }
    expect([refuses('typescript'), refuses('python')]).toEqual([false, true])
    languages = ['python']
    expect([refuses('typescript'), refuses('python')]).toEqual([true, false])
    // Two lists whose names run together the same way are not the same languages.
    languages = ['ab', 'c']
    expect(refuses('ab')).toBe(false)
    languages = ['a', 'bc']
    expect([refuses('ab'), refuses('a')]).toEqual([true, false])
  })
})

describe('an execution input without arguments', () => {
  const output = { schema: { type: 'number' }, render: (_a: unknown, v: number) => [{ type: 'text' as const, text: String(v) }] } as const
  const add = defineTool({ name: 'add', description: 'd', parameters: { a: { type: 'number' } }, output, execute: () => 1 })

  it('`Arguments` (another case) is named as the member meant; `arguments: undefined` names no member', async () => {
    const runtime = createToolRuntime({})
    runtime.register(add)
    const message = async (extra: Record<string, unknown>) => {
      const result = await runtime.execute({ callId: 'c', name: 'add', signal: signal(), ...extra } as never)
      return result.isError ? [result.error.info?.code, result.error.message] : ['ran']
    }
    expect(await message({ Arguments: { a: 1 } })).toEqual([
      'INVALID_ARGS',
      'the execution input has no arguments (it has "Arguments": did you mean "arguments"?): pass arguments, a JSON object ({} for a tool that takes none)',
    ])
    expect(await message({ ARGUMENTS: { a: 1 } })).toEqual([
      'INVALID_ARGS',
      'the execution input has no arguments (it has "ARGUMENTS": did you mean "arguments"?): pass arguments, a JSON object ({} for a tool that takes none)',
    ])
    expect(await message({ arguments: undefined })).toEqual(['INVALID_ARGS', 'the execution input has no arguments: pass arguments, a JSON object ({} for a tool that takes none)'])
    await runtime.dispose()
  })
})

describe('runToolCalls', () => {
  it('a misspelt option is INVALID_OPTIONS', async () => {
    const runtime = createToolRuntime({})
    await expect(runToolCalls(runtime, [], { maxParalel: 2 } as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/^runToolCalls: unknown option "maxParalel"/) })
    await runtime.dispose()
  })
})
