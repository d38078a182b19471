/**
 * The scripted agent-loop example as a reusable module: the same shop question answered
 * over the demo tools in native mode (step-by-step tool calls, every result re-entering
 * the context) and in code mode (one `run_code` program, only its output re-entering).
 * `examples/agent-loop.ts` prints it; `bench/token-economy.bench.ts` measures it.
 *
 * @example
 * ```ts
 * const native = await runScriptedTask('native')
 * const code = await runScriptedTask('code')
 * console.log(native.answer === code.answer) // true
 * ```
 *
 * @module
 */
import { SDK_SECTION, ToolError, createMemorySessionLog, createToolRuntime } from '../../src/index.js'
import type { AnyToolDefinition, CodeRuntime, ToolRuntime } from '../../src/index.js'
import { createSandboxRuntime } from '../../platforms/node/index.js'
import { registerDemoTools } from '../../demo/tools/index.js'
import { discoveryScript } from './discovery.js'
import { runAgentLoop, scriptedModel, type ChatMessage, type ModelRequest } from './loop.js'
import { TASK_INSTRUCTIONS, TASK_QUESTION, codeScript, nativeScript, parseAnswer, type TaskAnswer } from './task.js'

export * from './loop.js'
export * from './task.js'
export * from './accounting.js'
export * from './discovery.js'

/** How the tools are presented to the scripted model. */
export type ScriptedTaskMode = 'native' | 'code'

/** Options of {@link runScriptedTask}. */
export interface ScriptedTaskOptions {
  /**
   * The Code Mode sandbox (code mode only). Default: a fresh `createSandboxRuntime()`,
   * disposed at the end; a runtime passed in is not disposed.
   */
  readonly codeRuntime?: CodeRuntime
  /**
   * Tools registered beside the demo tools: a large registry (the bench's 1,000-tool
   * scenario). The task only needs the demo tools; the others are there to be searched past.
   */
  readonly extraTools?: readonly AnyToolDefinition[]
  /** The registry's `sdkBudgetChars` (default: the registry's default). */
  readonly sdkBudgetChars?: number
}

/** The outcome of one scripted run. */
export interface ScriptedTaskRun {
  readonly mode: ScriptedTaskMode
  /** The full conversation, final answer included. */
  readonly messages: readonly ChatMessage[]
  /** Every request sent to the model (wire tools + the history at that point). */
  readonly requests: readonly ModelRequest[]
  /** The final answer text. */
  readonly answerText: string
  /** The final answer, parsed. */
  readonly answer: TaskAnswer
  /** Tool calls the model emitted. */
  readonly toolCalls: number
  /** Tool calls that actually ran (in code mode: the program's sub-calls). */
  readonly executedCalls: number
  /** Code mode: whether the prompt declared the tools (the full SDK) or carried the catalog form. */
  readonly sdkForm?: 'full' | 'catalog'
  /** How many tools the registry held (the demo tools and any extra ones). */
  readonly tools: number
}

/** Whether the prompt's SDK section declares the tools (the full SDK) rather than the catalog form. */
function declaresTools(runtime: ToolRuntime): boolean {
  const sdk = runtime.assemble().sections.find((section) => section.id === SDK_SECTION.id)
  return sdk !== undefined && sdk.text.includes('interface ToolArgsMap')
}

/**
 * Runs the shop task end to end in `mode` over a fresh demo tool set (workspace + shop,
 * as an agent would be offered them). Throws `ToolError('INVALID_OPTIONS')` for an
 * unknown mode and `ToolError('TOOL_FAILED')` if a call the script depends on fails.
 */
export async function runScriptedTask(mode: ScriptedTaskMode, options: ScriptedTaskOptions = {}): Promise<ScriptedTaskRun> {
  if (mode !== 'native' && mode !== 'code') throw new ToolError('INVALID_OPTIONS', `mode must be "native" or "code" (got ${JSON.stringify(mode)})`)
  const ownsCodeRuntime = mode === 'code' && options.codeRuntime === undefined
  const codeRuntime = mode === 'code' ? (options.codeRuntime ?? createSandboxRuntime()) : undefined
  const sessionLog = createMemorySessionLog()
  const budget = options.sdkBudgetChars === undefined ? {} : { sdkBudgetChars: options.sdkBudgetChars }
  const runtime = createToolRuntime({ mode, sessionLog, ...budget, ...(codeRuntime === undefined ? {} : { codeRuntime }) })
  try {
    registerDemoTools(runtime)
    for (const tool of options.extraTools ?? []) runtime.register(tool)
    // The scripted model reads its prompt: with the tools declared it writes the program
    // at once; with the catalog form it looks them up first.
    const declared = mode === 'code' ? declaresTools(runtime) : undefined
    const run = await runAgentLoop({
      runtime,
      model: scriptedModel(mode === 'native' ? nativeScript : declared === false ? discoveryScript : codeScript),
      instructions: TASK_INSTRUCTIONS,
      question: TASK_QUESTION,
    })
    const subCalls = sessionLog.events.filter((event) => event.type === 'tool/code-dispatch').length
    return {
      mode,
      messages: run.messages,
      requests: run.requests,
      answerText: run.answer,
      answer: parseAnswer(run.answer),
      toolCalls: run.toolCalls,
      executedCalls: mode === 'code' ? subCalls : run.toolCalls,
      ...(declared === undefined ? {} : { sdkForm: declared ? 'full' : 'catalog' }),
      tools: runtime.schemas().filter((schema) => schema.name !== 'run_code').length,
    }
  } finally {
    await runtime.dispose()
    if (ownsCodeRuntime) await codeRuntime?.dispose()
  }
}
