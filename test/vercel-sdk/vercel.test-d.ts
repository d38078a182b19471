/**
 * The Vercel AI SDK converters type-check against the SDK's own types (`ai`, installed
 * in this folder's own package: see README.md here).
 */
import type { ModelMessage, ToolCallPart, ToolModelMessage, ToolResultPart, ToolSet, TypedToolCall } from 'ai'
import { jsonSchema } from 'ai'
import { describe, expectTypeOf, it } from 'vitest'
import { parseVercelToolCalls, toVercelToolMessage, toVercelToolResultParts, toVercelTools } from '../../src/providers/index.js'
import type { PromptAssembly } from '../../src/runtime-types.js'
import type { ToolExecutionResult } from '../../src/types.js'

declare const assembly: PromptAssembly
declare const results: ToolExecutionResult[]
const options = { signal: new AbortController().signal }

describe('Vercel AI SDK', () => {
  it('tools are a ToolSet; toolCalls in; tool messages out', () => {
    const tools: ToolSet = toVercelTools(assembly.tools, { jsonSchema })
    expectTypeOf(tools).toExtend<ToolSet>()
    const toolCalls = [] as TypedToolCall<ToolSet>[]
    const parts = [] as ToolCallPart[]
    const calls = parseVercelToolCalls(toolCalls, options)
    parseVercelToolCalls(parts, options)
    const resultParts: ToolResultPart[] = toVercelToolResultParts(calls, results)
    const message: ToolModelMessage = toVercelToolMessage(calls, results)
    const history: ModelMessage[] = [message]
    expectTypeOf(resultParts).toExtend<ToolResultPart[]>()
    expectTypeOf(history).toExtend<ModelMessage[]>()
  })
})

