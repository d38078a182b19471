/**
 * Tool layers: the global layer and one layer per agent (its own tools, its masks over
 * global tools, its presentation mode), and resolution across them. An agent's own
 * tool shadows a global of the same name for that agent; masks hide global tools from
 * it; `run_code` resolves wherever the presentation is not `native`.
 *
 * @module
 */
import { RUN_CODE_TOOL_NAME } from '../code-mode/registry-seam.js'
import { compareCodePoints } from '../code-mode/sdk-common.js'
import { ToolError } from '../errors.js'
import type { ToolsChangedEvent } from '../runtime-types.js'
import type { RegisteredTool } from '../schema/tool-definition.js'
import type { ScopeKey, ToolFilter, ToolPresentationMode, ToolSchema } from '../types.js'
import { misuse } from './scope.js'

const MODES: ReadonlySet<string> = new Set(['native', 'code', 'both'])

interface Mask {
  readonly kind: 'allow' | 'deny'
  readonly names: ReadonlySet<string>
}

/** One agent's layer. */
interface AgentLayer {
  readonly tools: Map<string, RegisteredTool>
  readonly masks: Mask[]
  presentation: ToolPresentationMode | undefined
}

/** What the layers need from the registry that owns them. */
export interface ToolLayersOptions {
  /** The presentation of agents that declare none (and of the global layer). */
  readonly defaultMode: ToolPresentationMode
  /** The `run_code` transport (created after the layers: it reads them). */
  readonly transport: () => RegisteredTool
  /** Told about every change (the `tools/changed` hook). */
  readonly onChange: (event: ToolsChangedEvent) => void
}

/** The global layer and the agents' layers of one registry. */
export class ToolLayers {
  readonly #global = new Map<string, RegisteredTool>()
  readonly #agents = new Map<ScopeKey, AgentLayer>()
  readonly #schemas = new WeakMap<RegisteredTool, ToolSchema>()
  readonly #options: ToolLayersOptions

  constructor(options: ToolLayersOptions) {
    this.#options = options
  }

  /** Opens `agent`'s (empty) layer. */
  openAgent(agent: ScopeKey): void {
    this.#agents.set(agent, { tools: new Map(), masks: [], presentation: undefined })
  }

  /**
   * Closes `agent`'s layer: from now on its tools and masks no longer resolve. The undo
   * of each registration still runs later (it holds its layer), so every removal is
   * still announced.
   */
  closeAgent(agent: ScopeKey): void {
    this.#agents.delete(agent)
  }

  /** The presentation mode in force for `agent` (the default for the global layer). */
  presentation(agent: ScopeKey | undefined): ToolPresentationMode {
    if (agent === undefined) return this.#options.defaultMode
    return this.#agents.get(agent)?.presentation ?? this.#options.defaultMode
  }

  /** What `name` resolves to for `agent`: its own tool, else an admitted global, else nothing. */
  resolve(name: string, agent: ScopeKey | undefined): RegisteredTool | undefined {
    if (name === RUN_CODE_TOOL_NAME) return this.presentation(agent) === 'native' ? undefined : this.#options.transport()
    const layer = agent === undefined ? undefined : this.#agents.get(agent)
    if (layer !== undefined) {
      const local = layer.tools.get(name)
      if (local !== undefined) return local
    }
    const global = this.#global.get(name)
    if (global === undefined) return undefined
    return layer === undefined || admitted(layer, name) ? global : undefined
  }

  /** Everything `agent` sees except `run_code`: admitted, unshadowed globals, then its own tools. */
  visibleTools(agent: ScopeKey | undefined): RegisteredTool[] {
    const layer = agent === undefined ? undefined : this.#agents.get(agent)
    const out: RegisteredTool[] = []
    for (const [name, tool] of this.#global) {
      if (layer !== undefined && (layer.tools.has(name) || !admitted(layer, name))) continue
      out.push(tool)
    }
    if (layer !== undefined) for (const tool of layer.tools.values()) out.push(tool)
    return out
  }

  /** The binding names of a Code Mode program of `agent`: its visible tools, by code point. */
  bindingNames(agent: ScopeKey | undefined): readonly string[] {
    return Object.freeze(this.visibleTools(agent).map((tool) => tool.definition.name).sort(compareCodePoints))
  }

  /** The frozen wire schema of a tool (cached per registration). */
  schemaOf(tool: RegisteredTool): ToolSchema {
    let schema = this.#schemas.get(tool)
    if (schema === undefined) {
      const { name, description, parameters, callers } = tool.definition
      // `callers` only when restricted: the wire schema of an unrestricted tool keeps its three fields.
      schema = Object.freeze({ name, description, parameters, ...(callers === undefined || callers.length === 2 ? {} : { callers }) })
      this.#schemas.set(tool, schema)
    }
    return schema
  }

  /** The catalog `agent` sees: visible tools, plus `run_code` unless its presentation is `native`. */
  schemas(agent: ScopeKey | undefined): ToolSchema[] {
    const out = this.visibleTools(agent).map((tool) => this.schemaOf(tool))
    if (this.presentation(agent) !== 'native') out.push(this.schemaOf(this.#options.transport()))
    return out
  }

  /** Adds a detached tool to `agent`'s layer (the global layer when undefined); returns its undo. */
  add(agent: ScopeKey | undefined, tool: RegisteredTool): () => void {
    const layer = agent === undefined ? this.#global : this.#agentLayer(agent).tools
    const name = tool.definition.name
    if (layer.has(name)) {
      const where = agent === undefined ? 'the global layer' : `agent ${JSON.stringify(agent)}`
      throw new ToolError('DUPLICATE_TOOL', `a tool named ${JSON.stringify(name)} is already registered in ${where}`)
    }
    layer.set(name, tool)
    this.#options.onChange({ kind: 'register', name, ...(agent !== undefined ? { agent } : {}) })
    return () => {
      if (layer.get(name) !== tool) return
      layer.delete(name)
      this.#options.onChange({ kind: 'unregister', name, ...(agent !== undefined ? { agent } : {}) })
    }
  }

  /** Adds a mask over global tools to `agent`'s layer; returns its undo. Throws `INVALID_SCOPE_OPERATION`. */
  restrict(agent: ScopeKey, filter: ToolFilter): () => void {
    const layer = this.#agentLayer(agent)
    const mask = this.#checkMask(agent, layer, filter)
    layer.masks.push(mask)
    this.#options.onChange({ kind: 'restrict', agent })
    return () => {
      const index = layer.masks.indexOf(mask)
      if (index >= 0) layer.masks.splice(index, 1)
      this.#options.onChange({ kind: 'unrestrict', agent })
    }
  }

  /** Declares `agent`'s presentation (once per agent); returns its undo. Throws `INVALID_SCOPE_OPERATION`. */
  presentAs(agent: ScopeKey, mode: ToolPresentationMode): () => void {
    const layer = this.#agentLayer(agent)
    if (typeof mode !== 'string' || !MODES.has(mode)) misuse(`presentAs(mode) needs 'native', 'code' or 'both' (got ${JSON.stringify(String(mode))})`)
    if (layer.presentation !== undefined) misuse(`agent ${JSON.stringify(agent)} already declared its presentation ('${layer.presentation}')`)
    layer.presentation = mode
    this.#options.onChange({ kind: 'present-as', agent })
    return () => {
      layer.presentation = undefined
      this.#options.onChange({ kind: 'present-as', agent })
    }
  }

  #agentLayer(agent: ScopeKey): AgentLayer {
    const layer = this.#agents.get(agent)
    // Scopes check liveness first, so a missing layer is a bug, not a user error.
    if (layer === undefined) throw new ToolError('DISPOSED', `agent scope ${JSON.stringify(agent)} is disposed`)
    return layer
  }

  #checkMask(agent: ScopeKey, layer: AgentLayer, filter: ToolFilter): Mask {
    if (typeof filter !== 'object' || filter === null) misuse('restrict(filter) needs { allow: [...] } or { deny: [...] }')
    const hasAllow = Object.hasOwn(filter, 'allow')
    const hasDeny = Object.hasOwn(filter, 'deny')
    if (hasAllow === hasDeny) misuse('restrict(filter) needs exactly one of allow / deny')
    const kind = hasAllow ? 'allow' : 'deny'
    const names: unknown = (filter as Record<string, unknown>)[kind]
    if (!Array.isArray(names) || names.length === 0) misuse(`restrict({ ${kind} }) needs a non-empty array of tool names`)
    const set = new Set<string>()
    for (const name of names as unknown[]) {
      if (typeof name !== 'string') misuse(`restrict({ ${kind} }) names must be strings`)
      if (name === RUN_CODE_TOOL_NAME) misuse('`run_code` is reserved and cannot be restricted')
      if (layer.tools.has(name)) misuse(`${JSON.stringify(name)} is local to agent ${JSON.stringify(agent)}; masks apply to global tools only`)
      if (!this.#global.has(name)) misuse(`restrict({ ${kind} }) names an unknown global tool ${JSON.stringify(name)}`)
      set.add(name)
    }
    return Object.freeze({ kind, names: set })
  }
}

function admitted(layer: AgentLayer, name: string): boolean {
  for (const mask of layer.masks) {
    if (mask.kind === 'allow' ? !mask.names.has(name) : mask.names.has(name)) return false
  }
  return true
}
