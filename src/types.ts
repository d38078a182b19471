/**
 * The tool domain's seam: definitions, executions, results, policy decisions and hook payloads.
 * @module
 */
import type { JsonObject, JsonValue } from './json/json-value.js'
import type { JsonSchemaNode, ObjectJsonSchema } from './schema/json-schema-node.js'
import type { ToolErrorCode } from './errors.js'
import type { ToolCallView, ToolResultView } from './presentation.js'

/** An agent's id: the key of its registry layer. */
export type ScopeKey = string

/** How tools are presented to a model. */
export type ToolPresentationMode = 'native' | 'code' | 'both'

/**
 * Who may call a tool: `native` — the model, directly (a wire tool, a native function
 * call); `code` — a Code Mode program (`tools.x()`). A definition's `callers` lists one
 * or both (the default: both).
 */
export type ToolCaller = 'native' | 'code'

/** Undoes a registration (tool, guard, listener, mask, presentation). Idempotent. */
export type Disposer = () => void

// ───────────────────────── content ─────────────────────────

/** Model-facing text. */
export interface TextContent {
  readonly type: 'text'
  readonly text: string
}

/** Model-facing image (base64 data). */
export interface ImageContent {
  readonly type: 'image'
  readonly data: string
  readonly mimeType: string
}

/** One block of model-facing content. */
export type ContentBlock = TextContent | ImageContent

/**
 * A context message deferred until after the tool's result (the loop appends these in
 * order after the step's results, preserving call/result adjacency).
 */
export interface AdditionalContext {
  /** Who produced it (a plugin or tool name); kept for attribution. */
  readonly source: string
  /** The message text. */
  readonly content: string
  /** Optional JSON metadata. */
  readonly meta?: JsonValue
}

// ───────────────────────── schemas & definitions ─────────────────────────

/** What a model sees of one tool under native presentation. */
export interface ToolSchema {
  readonly name: string
  readonly description: string
  /** A JSON Schema object for the arguments. */
  readonly parameters: ObjectJsonSchema
  /**
   * Who may call the tool, present only when the definition restricts it (one caller):
   * `['native']` never reaches a program's SDK, `['code']` is never a wire tool.
   */
  readonly callers?: readonly ToolCaller[]
}

/** The mandatory canonical output declaration of a tool. */
export interface ToolOutputDeclaration<Args = JsonObject, Value extends JsonValue = JsonValue> {
  /** The schema every returned value is validated against (any JSON root). */
  readonly schema: JsonSchemaNode
  /** Pure projection of the canonical value to model-facing content. */
  render(args: Args, value: Value): readonly ContentBlock[]
  /** Pure projection to JSON metadata, computed for direct top-level calls only. */
  presentationMeta?(args: Args, value: Value): JsonValue
}

/**
 * A registered tool. `defineTool()` builds one with typed, validated arguments; a raw
 * definition owns its input validation but still declares and receives
 * registry-enforced output.
 */
export interface ToolDefinition<Args = JsonObject, Value extends JsonValue = JsonValue> extends ToolSchema {
  readonly output: ToolOutputDeclaration<Args, Value>
  /**
   * Runs the tool. Receives validated arguments and the run context; returns only the
   * canonical JSON value declared by `output.schema`; observes `exec.signal` and settles
   * only after owned work stops.
   */
  execute(args: Args, exec: ToolRunContext): Promise<Value> | Value
  /**
   * Strict argument validation, run before any policy. Throws `ToolArgsError` on bad
   * input; returns the (unchanged, frozen) arguments typed. Absent on raw tools.
   */
  readonly validateArgs?: (args: JsonValue) => Args
  /**
   * Soft validation for presenters and classifiers: returns the typed arguments or
   * `undefined` when they do not validate. Never throws.
   */
  readonly softValidateArgs?: (args: JsonValue) => Args | undefined
  /**
   * Last content-only word on every normalized result, failures included. Synchronous
   * and total; return `undefined` to keep the content. Snapshotted when a call starts.
   */
  finalizeContent?(exec: ToolExecution, result: ToolExecutionResult): readonly ContentBlock[] | undefined
  /** How a UI renders a call of this tool (pure; undefined → generic fallback). */
  presentCall?(args: Args | undefined, rawArgs: JsonValue): ToolCallView | undefined
  /** How a UI renders a result of this tool (pure; undefined → generic fallback). */
  presentResult?(args: Args | undefined, result: ToolResultRecord, rawArgs: JsonValue): ToolResultView | undefined
  /** Cooperative deadline, enforced only by the `timeoutPolicy()` wrapper. Positive and finite. */
  readonly timeoutMs?: number
  /**
   * `true`: running this tool twice with the same arguments has the effect of running it
   * once. A durable run (docs/durability.md) then runs a call again whose body a crash cut
   * off, instead of failing it as `INTERRUPTED`. Default `false`.
   */
  readonly idempotent?: boolean
  /** Exact `true` lets this call overlap other safe calls; anything else is exclusive. */
  isConcurrencySafe?(args: Args): boolean
  /**
   * Who may call this tool (default both): `['native']` — only the model directly (absent
   * from the Code Mode SDK; a program's call fails with `UNKNOWN_TOOL`); `['code']` —
   * only Code Mode programs (absent from the wire tools; a direct call fails with
   * `UNKNOWN_TOOL` and a hint to call it from `run_code`). Validated at registration.
   */
  readonly callers?: readonly ToolCaller[]
  /**
   * What a call will do, for the person asked to approve it (a diff, "overwrites 12
   * lines"): called only when the call asks, after its arguments validated, with the
   * call's signal. Bounded by the registry: a throw, a non-string or no answer within
   * `PREVIEW_TIMEOUT_MS` shows "preview unavailable: <reason>"; the text is shown through
   * `renderApprovalPreview` (escaped, at most 4,096 bytes, a cut said). docs/approvals.md, "Previews".
   */
  preview?(args: Args, ctx: ToolPreviewContext): string | Promise<string>
}

/** What a tool's `preview` receives besides the arguments. */
export interface ToolPreviewContext {
  /** Aborted when the call is cancelled or the preview's time is up: stop reading then. */
  readonly signal: AbortSignal
  readonly callId: string
  readonly name: string
  readonly agent?: ScopeKey
}

/** A definition with its argument and value types erased, as the registry stores it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyToolDefinition = ToolDefinition<any, any>

/** The durable part of a result that presenters receive (replay-safe: no canonical value). */
export interface ToolResultRecord {
  readonly isError: boolean
  readonly content: readonly ContentBlock[]
  readonly meta?: JsonValue
  readonly error?: ToolFailureError
}

// ───────────────────────── executions ─────────────────────────

declare const executionTokenBrand: unique symbol

/**
 * A fresh opaque token the registry mints for each execution. Equality correlation
 * only; it never crosses a model, log or worker boundary.
 */
export type ToolExecutionToken = symbol & { readonly [executionTokenBrand]: true }

/** The caller-supplied description of one call. */
export interface ToolExecutionInput {
  /** The model's call id (or a derived id like `<callId>:code:<n>`). */
  readonly callId: string
  readonly name: string
  /** The model's arguments; snapshotted as lossless JSON and frozen on entry. */
  readonly arguments: unknown
  /** The caller's cancellation signal. Required. */
  readonly signal: AbortSignal
  /** The calling agent's scope; absent means the global layer. */
  readonly agent?: ScopeKey
  /** The enclosing execution's token, for nested calls. */
  readonly parent?: ToolExecutionToken
  /** When the time this call may take ends (epoch ms), shown to the body as `exec.deadline`. */
  readonly deadline?: number
  /**
   * Holds the clock `deadline` counts on while a person decides this call's approval
   * (the bridge passes the binding call's `holdWallClock`, so the wait is not charged to
   * the run's wall-clock budget). The pipeline calls it only while the approval handler
   * is pending and releases it when the handler settles.
   */
  readonly holdWallClock?: () => () => void
  /**
   * Who decides this call's `ask` (and the `ask`s of the calls nested in it, such as a
   * `run_code` program's sub-calls) instead of `ToolRuntimeOptions.approval`. The MCP
   * export passes one that asks the connected client (`elicitation/create`).
   */
  readonly approval?: ApprovalHandler
  /**
   * The caller's W3C trace context (`traceparent`, `tracestate`): the call's span becomes a
   * child of the caller's trace. An invalid `traceparent` is ignored (the call starts its
   * own trace); a nested call's span is always its parent call's child.
   */
  readonly trace?: { readonly traceparent: string; readonly tracestate?: string }
  /**
   * Who asked for this call: a non-secret label (1–64 of `A-Z a-z 0-9 _ -`, never a token), such as
   * the HTTP app's principal id.
   */
  readonly principal?: string
}

/** The immutable pipeline view of one execution. */
export interface ToolExecution {
  readonly token: ToolExecutionToken
  readonly callId: string
  readonly name: string
  /** Deep-frozen lossless JSON. */
  readonly arguments: JsonValue
  readonly signal: AbortSignal
  readonly agent?: ScopeKey
  readonly parent?: ToolExecutionToken
  /**
   * When this call's time ends (epoch ms), so a tool can pass the remaining time on to a
   * remote API. Set for Code Mode sub-calls (the run's wall-clock budget, moved later by
   * the time the call waited for a person); absent outside Code Mode. The call's
   * `signal` aborts when the run ends, at the latest at this deadline.
   */
  readonly deadline?: number
  /**
   * `true` when no call runs: plan approval asks the `tools/pre-execute` gate whether this
   * tool would ask, with empty arguments, before a program runs (docs/approvals.md).
   */
  readonly planProbe?: true
  /** Who asked for the call (`ToolExecutionInput.principal`; a nested call's is its parent's). */
  readonly principal?: string
}

/** The `tools/execute` view: only `signal` is mutable (replace and restore, never delete). */
export interface ToolDispatchExecution extends Omit<ToolExecution, 'signal'> {
  signal: AbortSignal
}

/** What a tool body receives. */
export interface ToolRunContext extends ToolExecution {
  /** Defers one context until the tool's final result (kept even if the tool later throws). */
  deferContext(context: AdditionalContext): void
}

// ───────────────────────── results ─────────────────────────

/** Internal identification of a failure: the error's name and stable code. */
export interface ToolFailureInfo {
  readonly name: string
  readonly code: ToolErrorCode | (string & {})
}

/** The error half of a failed result. */
export interface ToolFailureError {
  readonly message: string
  readonly info?: ToolFailureInfo
}

/** A successful, frozen outcome. */
export interface ToolSuccess {
  readonly isError: false
  readonly value: JsonValue
  readonly content: readonly ContentBlock[]
  readonly meta?: JsonValue
  readonly additionalContexts?: readonly AdditionalContext[]
}

/** A failed, frozen outcome. It has no value; content is exactly `Error: <message>` unless finalized. */
export interface ToolFailure {
  readonly isError: true
  readonly error: ToolFailureError
  readonly content: readonly ContentBlock[]
  readonly meta?: JsonValue
  readonly additionalContexts?: readonly AdditionalContext[]
}

/** The outcome of one execution. */
export type ToolExecutionResult = ToolSuccess | ToolFailure

/** Whether a call may overlap others. */
export type ToolExecutionMode = 'parallel' | 'exclusive'

// ───────────────────────── policy ─────────────────────────

/** The `tools/pre-execute` gate's decision. */
export type PreToolDecision =
  | { readonly kind: 'allow' }
  | { readonly kind: 'deny'; readonly reason: string }
  | { readonly kind: 'ask'; readonly reason?: string }

/** The `tools/post-execute` decision. Accept replaces content OR value, never both. */
export type PostToolDecision =
  | {
      readonly kind: 'accept'
      readonly content?: readonly ContentBlock[]
      readonly value?: JsonValue
      readonly additionalContexts?: readonly AdditionalContext[]
    }
  | {
      readonly kind: 'block'
      readonly feedback: string
      readonly additionalContexts?: readonly AdditionalContext[]
    }

/** A monotonic synchronous guard: a string denies with that reason; undefined leaves the call alone. */
export type ToolGuard = (execution: ToolExecution) => string | undefined

/** What the approval handler is asked. */
export interface ApprovalRequest {
  readonly execution: ToolExecution
  /**
   * The asking tool's declared parameters (its `parameters` schema), so a prompt can show
   * the arguments in the tool's order (`renderApprovalArguments`). Set by the registry.
   */
  readonly parameters?: ObjectJsonSchema
  readonly reason?: string
  /** The enclosing call's id for a nested call (a Code Mode sub-call's `run_code` call id). */
  readonly parentCallId?: string
  /** An unguessable identity of the run a nested call belongs to (never shown to anyone): a stored decision answers only a call of that run. Set by the registry. */
  readonly runKey?: string
  /**
   * `'plan'`: one request for a whole `run_code` program before it runs (`execution` is the
   * `run_code` call; see `plan`). Absent or `'call'`: one tool call. Only a handler marked
   * `acceptsPlans: true` receives plan requests (docs/approvals.md, "Plan approval").
   */
  readonly kind?: 'call' | 'plan'
  /** For a `'plan'` request: the program and its planned calls. */
  readonly plan?: ApprovalPlan
  /**
   * What the call will do, from the tool's `preview`, already rendered
   * (`renderApprovalPreview`: escaped, bounded, a cut said), or `preview unavailable: <reason>`.
   * Absent when the tool has no preview.
   */
  readonly preview?: string
}

/** What a plan request shows: the program, its static calls, and why each asking tool asks. */
export interface ApprovalPlan {
  /** The program's text, whole (renderers bound what they show: `renderApprovalPlan`). */
  readonly code: string
  /** The model's summary of the program (`run_code`'s `description`). */
  readonly description: string
  /** Every static tool reference of the program that the agent may call, in source order. */
  readonly calls: readonly { readonly name: string; readonly line: number; readonly column: number }[]
  /** The planned tools whose gate asks, with the gate's reason: Allow pre-approves exactly these. */
  readonly asking: readonly { readonly name: string; readonly reason?: string }[]
  /** The program may reach tools by a computed name: nothing is pre-approved, every asking call still asks. */
  readonly dynamic: boolean
}

/** Decides an `ask`: `true` approves; anything else (or a throw) denies. */
export type ApprovalHandler = (request: ApprovalRequest) => boolean | Promise<boolean>

/** A tool filter for `restrict()`: exactly one of `allow` / `deny`, non-empty. */
export type ToolFilter = { readonly allow: readonly string[] } | { readonly deny: readonly string[] }
