/**
 * Tool layers: the global layer and one layer per agent (its own tools, its masks over global
 * tools, its presentation mode), and resolution across them.
 * @module
 */
import { RUN_CODE_TOOL_NAME } from '../code-mode/registry-seam.js'
import { ToolError } from '../errors.js'
import type { ToolsChangedEvent } from '../runtime-types.js'
import type { RegisteredTool } from '../schema/tool-definition.js'
import type { ScopeKey, ToolFilter, ToolPresentationMode, ToolSchema } from '../types.js'
import { misuse } from './scope.js'
import { ToolView } from './view.js'

const MODES: ReadonlySet<string> = new Set(['native', 'code', 'both'])

interface Mask {
  readonly kind: 'allow' | 'deny'
  readonly names: ReadonlySet<string>
}

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
  /** The views built since the last change, per open agent (`undefined`: the global layer's). */
  readonly #views = new Map<ScopeKey | undefined, ToolView>()

  constructor(options: ToolLayersOptions) {
    this.#options = options
  }

  /** Opens `agent`'s (empty) layer. */
  openAgent(agent: ScopeKey): void {
    this.#agents.set(agent, { tools: new Map(), masks: [], presentation: undefined })
    this.#views.clear()
  }

  /** Closes `agent`'s layer: from now on its tools and masks no longer resolve. */
  closeAgent(agent: ScopeKey): void {
    this.#agents.delete(agent)
    this.#views.clear()
  }

  /** The layer `agent` resolves to: its own while it is open, else the global layer (`undefined`). */
  layerOf(agent: ScopeKey | undefined): ScopeKey | undefined {
    return agent !== undefined && this.#agents.has(agent) ? agent : undefined
  }

  /**
   * `agent`'s view (the global layer's when undefined or when `agent` has no open layer):
   * cached until the next change, so asking it on every call is a map lookup.
   */
  view(agent: ScopeKey | undefined): ToolView {
    const key = this.layerOf(agent)
    let view = this.#views.get(key)
    if (view === undefined) {
      view = this.#buildView(key === undefined ? undefined : this.#agents.get(key))
      this.#views.set(key, view)
    }
    return view
  }

  /** The presentation mode in force for `agent` (the default for the global layer). */
  presentation(agent: ScopeKey | undefined): ToolPresentationMode {
    return this.view(agent).mode
  }

  /** What `name` resolves to for `agent`: its own tool, else an admitted global, else nothing. */
  resolve(name: string, agent: ScopeKey | undefined): RegisteredTool | undefined {
    return this.view(agent).resolve(name)
  }

  /** Everything `agent` sees except `run_code` (a fresh array of the view's `tools`). */
  visibleTools(agent: ScopeKey | undefined): RegisteredTool[] {
    return [...this.view(agent).tools]
  }

  /** The binding names of a Code Mode program of `agent` (the view's, frozen). */
  bindingNames(agent: ScopeKey | undefined): readonly string[] {
    return this.view(agent).bindingNames
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

  /** The catalog `agent` sees (a fresh array): visible tools, plus `run_code` unless its presentation is `native`. */
  schemas(agent: ScopeKey | undefined): ToolSchema[] {
    return [...this.view(agent).schemas]
  }

  #buildView(layer: AgentLayer | undefined): ToolView {
    const tools: RegisteredTool[] = []
    for (const [name, tool] of this.#global) {
      if (layer !== undefined && (layer.tools.has(name) || !admitted(layer, name))) continue
      tools.push(tool)
    }
    if (layer !== undefined) for (const tool of layer.tools.values()) tools.push(tool)
    const mode = layer?.presentation ?? this.#options.defaultMode
    return new ToolView({ mode, tools, transport: this.#options.transport, schemaOf: (tool) => this.schemaOf(tool) })
  }

  /** Drops every cached view, then tells the owner (the `tools/changed` hook). */
  #changed(event: ToolsChangedEvent): void {
    this.#views.clear()
    this.#options.onChange(event)
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
    this.#changed({ kind: 'register', name, ...(agent !== undefined ? { agent } : {}) })
    return () => {
      if (layer.get(name) !== tool) return
      layer.delete(name)
      this.#changed({ kind: 'unregister', name, ...(agent !== undefined ? { agent } : {}) })
    }
  }

  /** Adds a mask over global tools to `agent`'s layer; returns its undo. Throws `INVALID_SCOPE_OPERATION`. */
  restrict(agent: ScopeKey, filter: ToolFilter): () => void {
    const layer = this.#agentLayer(agent)
    const mask = this.#checkMask(agent, layer, filter)
    layer.masks.push(mask)
    this.#changed({ kind: 'restrict', agent })
    return () => {
      const index = layer.masks.indexOf(mask)
      if (index >= 0) layer.masks.splice(index, 1)
      this.#changed({ kind: 'unrestrict', agent })
    }
  }

  /** Declares `agent`'s presentation (once per agent); returns its undo. Throws `INVALID_SCOPE_OPERATION`. */
  presentAs(agent: ScopeKey, mode: ToolPresentationMode): () => void {
    const layer = this.#agentLayer(agent)
    if (typeof mode !== 'string' || !MODES.has(mode)) misuse(`presentAs(mode) needs 'native', 'code' or 'both' (got ${JSON.stringify(String(mode))})`)
    if (layer.presentation !== undefined) misuse(`agent ${JSON.stringify(agent)} already declared its presentation ('${layer.presentation}')`)
    layer.presentation = mode
    this.#changed({ kind: 'present-as', agent })
    return () => {
      layer.presentation = undefined
      this.#changed({ kind: 'present-as', agent })
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
