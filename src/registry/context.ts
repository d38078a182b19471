/**
 * The registry's one context: the parts a registry is made of, built once by `createToolRuntime()`
 * (runtime.ts) and handed to every part.
 * @module
 */
import type { CodeModeRegistry } from '../code-mode/registry-seam.js'
import type { PromptAssembly, ToolCatalog, ToolRuntime } from '../runtime-types.js'
import type { ScopeKey, ToolExecutionResult, ToolGuard } from '../types.js'
import type { HookBus } from './hooks.js'
import type { InFlightCalls } from './in-flight.js'
import type { ToolLayers } from './layers.js'
import type { PromptSections } from './prompt-sections.js'
import type { PipelineSchedule } from './schedule.js'
import type { ScopedList } from './scoped-list.js'
import type { Telemetry } from '../telemetry/telemetry.js'

/** How one call enters the pipeline, besides its input. Absent: a plain call. */
export interface ExecuteHow {
  /** The turns of a `runToolCalls` batch (`batch.ts`); absent: the call takes no turns. */
  readonly schedule?: PipelineSchedule
  /** The call came through an agent facade whose scope is disposed: it ends `DISPOSED`. */
  readonly scopeDisposed?: boolean
}

/** The pipeline entry: one call in, one frozen result out. Never rejects. */
export type Execute = (input: unknown, how?: ExecuteHow) => Promise<ToolExecutionResult>

/** Everything the registry's parts share; see the module comment. */
export interface RegistryContext {
  /** The validated options (defaults applied). */
  readonly options: ToolRuntime['options']
  /** True once the registry is disposing. */
  isDisposed(): boolean
  /** The global and agent layers; `layers.view(agent)` answers who sees or may call what. */
  readonly layers: ToolLayers
  /** Listeners by hook, and `tools/changed`. */
  readonly hooks: HookBus
  /** The monotonic guards, global then per agent. */
  readonly guards: ScopedList<ToolGuard>
  /** The static prompt sections, global then per agent. */
  readonly sections: PromptSections
  /** The calls in flight and the live execution tokens. */
  readonly calls: InFlightCalls
  /** The pipeline entry. */
  readonly execute: Execute
  /** The scheduling class of one call (`ToolRuntime.executionMode`). */
  readonly executionMode: ToolRuntime['executionMode']
  /** The catalog of what a program of `agent` may call (cached per tool set). */
  catalog(agent: ScopeKey | undefined): ToolCatalog
  /** The `tools:sdk` text of `agent` in `language`: the full SDK within `sdkBudgetChars`, else the catalog form. */
  sdkText(agent: ScopeKey | undefined, language: string): string
  /** The prompt assembly of `agent`. */
  assemble(agent: ScopeKey | undefined): PromptAssembly
  /** Durable runs, when the registry has a `store`. */
  readonly durable?: CodeModeRegistry['durable']
  /** Spans and metrics, when `options.telemetry` names a tracer or a meter. */
  readonly telemetry?: Telemetry
}
