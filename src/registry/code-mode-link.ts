/**
 * The registry's side of the Code Mode seam: the {@link CodeModeRegistry} a registry hands to its
 * `run_code` tool.
 * @module
 */
import type { CodeModeRegistry } from '../code-mode/registry-seam.js'
import type { CodeDispatchEvent, CodeLogEvent, SessionLogEvent } from '../runtime-types.js'
import type { RegistryContext } from './context.js'

/**
 * What the link reads of the registry's context: the options, the layers (the binding
 * names are the agent's view's), the `tools/code-dispatch-log` listeners, the pipeline
 * entry and `executionMode`; the catalog (a program's `catalog` global) and durable runs
 * when there are any.
 */
export type CodeModeLinkContext = Pick<RegistryContext, 'options' | 'layers' | 'hooks' | 'execute' | 'executionMode' | 'durable'> &
  Partial<Pick<RegistryContext, 'catalog' | 'calls' | 'telemetry'>>

function isDispatchEvent(value: unknown): value is CodeDispatchEvent {
  // Stryker disable next-line ConditionalExpression: for null the reads below throw
  if (typeof value !== 'object' || value === null) return false
  const event = value as Partial<CodeDispatchEvent>
  return (
    event.type === 'tool/code-dispatch' &&
    typeof event.subCallId === 'string' &&
    typeof event.parentCallId === 'string' &&
    typeof event.name === 'string' &&
    typeof event.isError === 'boolean' &&
    Array.isArray(event.content)
  )
}

/** Creates the view of the registry that `run_code` runs against. */
export function createCodeModeLink(link: CodeModeLinkContext): CodeModeRegistry {
  const { options, layers, hooks } = link
  const sessionLog = options.sessionLog
  const append = (event: SessionLogEvent): void => {
    try {
      // Stryker disable next-line OptionalChaining: without a session log the TypeError lands in the catch below
      sessionLog?.append(event)
    } catch {
      // The session log is a sink; its failure never reaches a program or the pipeline.
    }
  }
  return {
    codeRuntime: (language) =>
      language === undefined || language === options.codeRuntime?.language ? options.codeRuntime : options.codeRuntimes?.find((r) => r.language === language),
    languages: () => (options.codeRuntime === undefined ? [] : [options.codeRuntime, ...(options.codeRuntimes ?? [])].map((r) => r.language)),
    maxParallelSubCalls: options.maxParallelSubCalls,
    maxOutputBytes: options.maxOutputBytes,
    bindingNames: (agent) => layers.view(agent).bindingNames,
    // The input only: a sub-call takes no batch turns and cannot claim a scope state.
    execute: (input) => link.execute(input),
    executionMode: link.executionMode,
    ...(link.catalog === undefined ? {} : { catalog: link.catalog }),
    ...(link.durable === undefined ? {} : { durable: link.durable }),
    ...(link.telemetry === undefined || link.calls === undefined ? {} : { runSpan: (token: symbol) => link.calls?.liveTokens.get(token)?.span }),
    logDispatchStart: append,
    logDispatch: async (event) => {
      let current: CodeDispatchEvent = event
      for (const listener of hooks.codeDispatchLog.list(event.agent)) {
        try {
          const next: unknown = await listener(current)
          if (isDispatchEvent(next)) current = next
        } catch {
          // A failing spill policy keeps the event as it was.
        }
      }
      append(current)
    },
    ...(sessionLog?.appendLog === undefined
      ? {}
      : {
          logOutput: (event: CodeLogEvent) => {
            try {
              // Stryker disable next-line OptionalChaining: logOutput exists only when appendLog did
              sessionLog.appendLog?.(event)
            } catch {
              // Live streaming is best-effort; the run's result carries every line.
            }
          },
        }),
  }
}
