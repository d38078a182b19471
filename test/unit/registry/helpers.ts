import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import type { CodeDispatchEvent } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { AnyToolDefinition, JsonValue, ToolExecutionInput, ToolRunContext } from './types.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { InFlightCalls } from '../../../src/registry/in-flight.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import type { PipelineCore } from '../../../src/registry/pipeline.js'
import { ScopedList } from '../../../src/registry/scoped-list.js'
import type { ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import type { ToolGuard } from '../../../src/types.js'

/** A resolvable handle: a promise plus its resolver, for stepping a test through phases. */
export interface Deferred<T = void> {
  promise: Promise<T>
  resolve(value: T): void
  reject(reason: unknown): void
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Lets every queued microtask and a macrotask run. */
export const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0))

let seq = 0
/** A fresh call input. */
export function call(name: string, args: unknown = {}, extra: Partial<ToolExecutionInput> = {}): ToolExecutionInput {
  return { callId: `c${++seq}`, name, arguments: args, signal: new AbortController().signal, ...extra }
}

/** A raw tool returning its `text` argument as a string. */
export function echoTool(name = 'echo', body?: (args: { text?: string }, exec: ToolRunContext) => unknown): AnyToolDefinition {
  return {
    name,
    description: `echo (${name})`,
    parameters: { type: 'object', properties: { text: { type: 'string' } } },
    output: { schema: { type: 'string' }, render: (_args: unknown, value: string) => [{ type: 'text', text: value }] },
    execute: body ?? ((args: { text?: string }) => args.text ?? ''),
  }
}

/** A defineTool-built tool with a typed number argument. */
export function addTool(name = 'add') {
  return defineTool({
    name,
    description: 'adds',
    parameters: { a: { type: 'number', required: true }, b: { type: 'number', required: true } },
    output: { schema: { type: 'number' }, render: (_args, value) => [{ type: 'text', text: String(value) }] },
    execute: (args) => args.a + args.b,
  })
}

/** The `code` of what `fn` throws, or `'OK'` when it returns. */
export function thrownCode(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return (error as { code?: unknown }).code
  }
  return 'OK'
}

/** Recursively checks that every object reachable from `value` is frozen. */
export function deepFrozen(value: unknown): boolean {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v !== 'object' || v === null) continue
    if (!Object.isFrozen(v)) return false
    for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key])
  }
  return true
}

export type { JsonValue }

/** A code runtime that runs nothing (every run returns no value and no logs): for SDK and catalog tests that only need its `language`. */
export function idleCodeRuntime(language = 'typescript'): CodeRuntime {
  return {
    language,
    isolation: 'in-process-test',
    capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
    run: async () => ({ logs: [] }),
    dispose: async () => {},
  }
}

/** A settled, successful `tool/code-dispatch` event of sub-call `p:code:1` (tool `echo`, agent `a`) whose content is one text part. */
export function codeDispatchEvent(text: string): CodeDispatchEvent {
  return Object.freeze<CodeDispatchEvent>({
    type: 'tool/code-dispatch',
    parentCallId: 'p',
    subCallId: 'p:code:1',
    name: 'echo',
    arguments: {},
    agent: 'a',
    isError: false,
    content: [{ type: 'text', text }],
    startedAt: 1,
    settledAt: 2,
    durationMs: 1,
  })
}

/** A pipeline's parts, built by hand ({@link pipelineCore}). */
export type PipelineTestCore = PipelineCore & { hooks: HookBus; guards: ScopedList<ToolGuard>; calls: InFlightCalls }

/** A pipeline over hand-built parts with one tool, `t`, whose value is its `exec.deadline` (or -1). */
export function pipelineCore(options: ToolRuntimeOptions = {}, calls: InFlightCalls = new InFlightCalls()): PipelineTestCore {
  const transport = detachToolDefinition(echoTool('run_code_stand_in'))
  const layers = new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: () => {} })
  layers.add(
    undefined,
    detachToolDefinition({
      name: 't',
      description: 'reports its deadline (test)',
      parameters: { type: 'object' },
      output: { schema: { type: 'number' }, render: (_a: unknown, v: number) => [{ type: 'text', text: String(v) }] },
      execute: (_args: unknown, exec: { deadline?: number }) => exec.deadline ?? -1,
    }),
  )
  return { options: validateRuntimeOptions(options), isDisposed: () => false, layers, hooks: new HookBus(), guards: new ScopedList<ToolGuard>(), calls }
}
