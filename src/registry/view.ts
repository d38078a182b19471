/**
 * One agent's view of the registry: the single answer to "which tools does this agent see, may it
 * call X natively or from code, and is `run_code` presented".
 * @module
 */
import { RUN_CODE_TOOL_NAME } from '../code-mode/registry-seam.js'
import { compareCodePoints } from '../code-mode/sdk-common.js'
import { allowsCaller, type RegisteredTool } from '../schema/tool-definition.js'
import type { AgentToolView } from '../runtime-types.js'
import type { ToolCaller, ToolPresentationMode, ToolSchema } from '../types.js'
import { quoteName } from '../util/unknown-field.js'

/**
 * Whether a tool (a definition or its wire schema, which carries `callers` when they are
 * restricted) may be offered to a model as a direct tool: its `callers` admit `native`.
 */
export function offeredNatively(tool: { readonly callers?: readonly ToolCaller[] }): boolean {
  return allowsCaller(tool, 'native')
}

/** The message of a direct call of a tool whose `callers` are `['code']`. */
export function codeOnlyToolMessage(name: string): string {
  return `\`${name}\` is callable only from inside a \`run_code\` program (its callers are ['code'])`
}

/** The message of a program's call of a tool whose `callers` are `['native']`. */
export function nativeOnlyToolMessage(name: string): string {
  return `\`${name}\` cannot be called from a program: it is offered to the model as a native tool only (its callers are ['native'])`
}

/** The message of a model-direct call the `code` presentation routes back to `run_code`. */
export function routeBackMessage(name: string): string {
  return `only \`run_code\` is callable directly — call \`${name}\` from inside a \`run_code\` program instead`
}

/** What a view is built from (supplied by the layers). */
export interface ToolViewSource {
  /** The presentation mode in force for the agent. */
  readonly mode: ToolPresentationMode
  /** The visible tools except `run_code`, in catalog order. */
  readonly tools: readonly RegisteredTool[]
  /** The `run_code` transport (read at use: the registry creates it after its layers). */
  readonly transport: () => RegisteredTool
  /** The frozen wire schema of a tool (cached per registration by the layers). */
  readonly schemaOf: (tool: RegisteredTool) => ToolSchema
}

/** One agent's immutable view; see the module comment for the rules. */
export class ToolView {
  /** The presentation mode in force. */
  readonly mode: ToolPresentationMode
  /** Whether `run_code` is presented (and resolves): every mode but `native`. */
  readonly presentsRunCode: boolean
  /** Every visible tool except `run_code`, in order: admitted unshadowed globals, then the agent's own. */
  readonly tools: readonly RegisteredTool[]
  /** The tools a model may call directly (none under `code`). */
  readonly native: readonly RegisteredTool[]
  /** The tools a program may call (what the SDK declares and the `catalog` global lists). */
  readonly code: readonly RegisteredTool[]
  /** The binding names of a program: every visible tool, native-only ones included, by code point. */
  readonly bindingNames: readonly string[]
  readonly #byName: ReadonlyMap<string, RegisteredTool>
  readonly #transport: () => RegisteredTool
  readonly #schemaOf: (tool: RegisteredTool) => ToolSchema
  #schemas: readonly ToolSchema[] | undefined
  #wire: readonly ToolSchema[] | undefined
  #public: AgentToolView | undefined

  constructor(source: ToolViewSource) {
    this.mode = source.mode
    this.presentsRunCode = source.mode !== 'native'
    this.tools = Object.freeze([...source.tools])
    this.native = Object.freeze(source.mode === 'code' ? [] : this.tools.filter((tool) => offeredNatively(tool.definition)))
    this.code = Object.freeze(this.tools.filter((tool) => allowsCaller(tool.definition, 'code')))
    this.bindingNames = Object.freeze(this.tools.map((tool) => tool.definition.name).sort(compareCodePoints))
    this.#byName = new Map(this.tools.map((tool) => [tool.definition.name, tool]))
    this.#transport = source.transport
    this.#schemaOf = source.schemaOf
    Object.freeze(this)
  }

  /** What `name` resolves to: a visible tool, `run_code` where presented, else `undefined`. */
  resolve(name: string): RegisteredTool | undefined {
    if (name === RUN_CODE_TOOL_NAME) return this.presentsRunCode ? this.#transport() : undefined
    return this.#byName.get(name)
  }

  /**
   * The `code` presentation's collapse: the refusal of a direct (`native`) call of
   * anything but `run_code` (the route-back hint when the tool exists), else `undefined`.
   */
  routeBack(name: string, caller: ToolCaller): string | undefined {
    if (caller !== 'native' || name === RUN_CODE_TOOL_NAME || this.mode !== 'code') return undefined
    return this.resolve(name) !== undefined ? routeBackMessage(name) : `unknown tool ${quoteName(name)}`
  }

  /** The refusal of `caller` by a resolved tool's `callers` (a hint), else `undefined`. */
  callerRefusal(tool: RegisteredTool, caller: ToolCaller): string | undefined {
    if (allowsCaller(tool.definition, caller)) return undefined
    return caller === 'native' ? codeOnlyToolMessage(tool.definition.name) : nativeOnlyToolMessage(tool.definition.name)
  }

  /** The wire catalog (`runtime.schemas`, `/v1/tools`): every visible tool, then `run_code` where presented. */
  get schemas(): readonly ToolSchema[] {
    this.#schemas ??= Object.freeze([...this.tools.map(this.#schemaOf), ...(this.presentsRunCode ? [this.#schemaOf(this.#transport())] : [])])
    return this.#schemas
  }

  /** The tools a prompt offers the model (before `toolOrder`): the native tools, then `run_code` where presented. */
  get wireTools(): readonly ToolSchema[] {
    this.#wire ??= Object.freeze([...this.native.map(this.#schemaOf), ...(this.presentsRunCode ? [this.#schemaOf(this.#transport())] : [])])
    return this.#wire
  }

  /** The public face of this view (`runtime.view(agent)`): the same answers as wire schemas and definitions, built once. */
  get public(): AgentToolView {
    this.#public ??= this.#buildPublic()
    return this.#public
  }

  #buildPublic(): AgentToolView {
    const schemaList = (tools: readonly RegisteredTool[]) => Object.freeze(tools.map(this.#schemaOf))
    const native = new Set(this.native)
    const code = new Set(this.code)
    return Object.freeze({
      mode: this.mode,
      presentsRunCode: this.presentsRunCode,
      tools: schemaList(this.tools),
      native: schemaList(this.native),
      code: schemaList(this.code),
      schemas: this.schemas,
      wireTools: this.wireTools,
      get: (name: string) => (typeof name === 'string' ? this.resolve(name)?.definition : undefined),
      canCall: (name: string, caller: ToolCaller): boolean => {
        if (typeof name !== 'string') return false
        if (caller === 'native' && name === RUN_CODE_TOOL_NAME) return this.presentsRunCode
        // run_code is never in `native` or `code`: a program cannot call the transport.
        const tool = this.#byName.get(name)
        if (tool === undefined) return false
        return caller === 'native' ? native.has(tool) : caller === 'code' ? code.has(tool) : false
      },
    })
  }
}
