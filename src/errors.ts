/**
 * Every error toolyard creates comes from this file, each with a stable `code`.
 * @module
 */

/** Every stable error code toolyard produces. */
export type ToolErrorCode =
  // ── pipeline outcomes (appear in ToolFailure.info.code) ──
  /** The name resolves to no visible tool (or, under `code`, to a tool that is only callable from a program). */
  | 'UNKNOWN_TOOL'
  /** The model's arguments failed validation (or were not lossless JSON). */
  | 'INVALID_ARGS'
  /** A `tools/pre-execute` listener denied the call (or a gate listener threw: fail closed). */
  | 'DENIED_BY_GATE'
  /** A registered guard denied the call (or a guard threw: fail closed). */
  | 'DENIED_BY_GUARD'
  /** The gate asked for approval and the approval handler refused, threw, or is absent. */
  | 'DENIED_BY_APPROVAL'
  /** The caller's signal fired before the tool body was invoked. */
  | 'ABORTED_BEFORE_DISPATCH'
  /** The caller's signal fired while the body ran, and the body would have succeeded. */
  | 'ABORTED'
  /** The `timeoutPolicy()` wrapper ended the call at the definition's `timeoutMs`. */
  | 'TOOL_TIMEOUT'
  /** The tool body threw (or rejected) with an error carrying no code of its own. */
  | 'TOOL_FAILED'
  /** The body (or a wrapper) produced a value that is not lossless JSON or fails `output.schema`, or `render` failed. */
  | 'INVALID_OUTPUT'
  /** A `tools/execute` wrapper threw an error of its own. */
  | 'WRAPPER_FAILED'
  /** A `tools/post-execute` listener threw, or returned a malformed decision or replacement. */
  | 'POST_POLICY_FAILED'
  /** A `tools/post-execute` listener blocked the result with feedback. */
  | 'BLOCKED'
  /** A Code Mode program failed (exception, timeout, abort or worker exit). */
  | 'CODE_RUN_FAILED'
  /** The code runtime refused a program at once: its runs and its queue are full. Retry later (HTTP 503). */
  | 'OVERLOADED'
  /** `preflight: 'block'`: the type-check found allowlisted mistakes (unknown tool, wrong argument…); nothing ran. */
  | 'PREFLIGHT_FAILED'
  // ── programming and configuration errors (thrown synchronously to the integrator) ──
  /** A value is not lossless JSON (undefined, BigInt, cycle, sparse array, -0, non-plain object…). */
  | 'INVALID_JSON'
  /** A schema (DSL or raw) uses an unsupported construct or is malformed. */
  | 'INVALID_SCHEMA'
  /** A tool definition is malformed (missing output declaration, bad timeoutMs, bad name…). */
  | 'INVALID_DEFINITION'
  /** A tool of that name is already registered in that layer. */
  | 'DUPLICATE_TOOL'
  /** The name is reserved (`run_code`). */
  | 'RESERVED_NAME'
  /** Options passed to a factory are invalid. */
  | 'INVALID_OPTIONS'
  /**
   * A scope operation was used where it does not apply or with bad input (a second
   * `presentAs` in one agent, `restrict` naming an unknown or agent-local tool, an
   * unknown hook, a reserved section id…).
   */
  | 'INVALID_SCOPE_OPERATION'
  /** Prompt assembly failed (missing code runtime, no SDK renderer, bad toolOrder…). */
  | 'ASSEMBLY_FAILED'
  /** The runtime or scope was disposed. */
  | 'DISPOSED'
  /** The execution input itself is malformed (not an object, no `AbortSignal`, non-string name or callId…). */
  | 'INVALID_EXECUTION'
  /** An MCP peer answered with a failed or malformed message (e.g. a `tools/list` page an import cannot read). */
  | 'MCP_PROTOCOL_ERROR'
  /**
   * A tool cannot be offered where it was asked for. An MCP tool the import cannot offer
   * (task-based execution required): reported in the import's `skipped()` records, never
   * thrown. A provider converter's tool whose name the provider refuses: thrown, naming the
   * converter, the tool and the rule — `toOpenAIChatTools` / `toOpenAIResponsesTools`:
   * `^[a-zA-Z0-9_-]{1,64}$`; `toAnthropicTools`: `^[a-zA-Z0-9_-]{1,128}$` (docs/providers.md).
   */
  | 'UNSUPPORTED_TOOL'
  // ── the durable store (src/durable/store.ts): thrown by every DurableStore driver ──
  /** A store key (or list prefix/cursor) is malformed: empty, too long, a character outside the key set, a `.`/`..` or empty segment. */
  | 'INVALID_STORE_KEY'
  /** A store value is not a string, or not well-formed text (a lone surrogate). */
  | 'INVALID_STORE_VALUE'
  /** A store value is larger than the driver's `maxValueBytes` (UTF-8 bytes). */
  | 'STORE_VALUE_TOO_LARGE'
  /** The store's backend failed (an I/O error, a corrupt record, a Durable Object storage error). */
  | 'STORE_FAILED'
  /** A file store could not take a key's lock within `lockTimeoutMs` (another process holds it): retry later. */
  | 'STORE_BUSY'
  // ── durable runs (src/durable/runs.ts, docs/durability.md) ──
  /** A durable run's sub-call was running when its process stopped; it is not run again (its tool is not `idempotent`). */
  | 'INTERRUPTED'
  /** A durable run's replay made another call (tool, agent or arguments) under a number whose record holds what was done: the call is not made. */
  | 'REPLAY_DIVERGED'
  /** A durable run's sub-call in a process another instance took the run over from (it was presumed dead): the call is not made. */
  | 'RUN_TAKEN_OVER'

/** Options accepted by every toolyard error constructor. */
export interface ToolErrorOptions {
  /** The underlying error, kept for debugging (never sent to a model). */
  readonly cause?: unknown
}

/** The base class of every error toolyard throws or records. */
export class ToolError extends Error {
  /** The stable machine-readable code. */
  readonly code: ToolErrorCode

  constructor(code: ToolErrorCode, message: string, options?: ToolErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ToolError'
    this.code = code
  }
}

/** One path-qualified validation failure. `path` is a JSON Pointer-like string (`/a/0/b`, `` for the root). */
export interface SchemaViolation {
  readonly path: string
  readonly message: string
}

/**
 * Thrown by argument validation (`defineTool`, `validateArgs`): the model's arguments
 * do not match the tool's parameter schema. Code `INVALID_ARGS`.
 */
export class ToolArgsError extends ToolError {
  /** Every violation found, path-qualified. */
  readonly violations: readonly SchemaViolation[]

  constructor(violations: readonly SchemaViolation[], options?: ToolErrorOptions) {
    super('INVALID_ARGS', formatViolations('Invalid arguments', violations), options)
    this.name = 'ToolArgsError'
    this.violations = Object.freeze(violations.map((v) => Object.freeze({ ...v })))
  }
}

/** Thrown when a value is not lossless JSON. Code `INVALID_JSON`; `path` names the offending location. */
export class LosslessJsonError extends ToolError {
  /** Where the offending value sits (`` for the root, `/a/0` below it). */
  readonly path: string

  constructor(path: string, message: string, options?: ToolErrorOptions) {
    super('INVALID_JSON', `${message} at ${path === '' ? 'the root' : path}`, options)
    this.name = 'LosslessJsonError'
    this.path = path
  }
}

/** Thrown when a schema is malformed or uses an unsupported construct. Code `INVALID_SCHEMA`. */
export class SchemaError extends ToolError {
  /** Where in the schema the problem sits. */
  readonly path: string

  constructor(path: string, message: string, options?: ToolErrorOptions) {
    super('INVALID_SCHEMA', `${message} at ${path === '' ? 'the schema root' : path}`, options)
    this.name = 'SchemaError'
    this.path = path
  }
}

/** How a Code Mode run failed. Orthogonal: a timeout is not an exception, an abort is not a timeout. */
export type CodeRunFailureKind = 'exception' | 'timeout' | 'abort' | 'worker-exit' | 'overloaded'

/** A Code Mode run failed. */
export class CodeRunFailedError extends ToolError {
  /** Which way the run failed. */
  readonly kind: CodeRunFailureKind
  /** What the program had printed before it failed. */
  readonly logs: readonly string[]

  constructor(kind: CodeRunFailureKind, message: string, logs: readonly string[] = [], options?: ToolErrorOptions) {
    const captured = logs.length > 0 ? `\nCaptured output:\n${logs.join('\n')}` : ''
    // A refused run is not a failed program: its own code says "retry later".
    super(kind === 'overloaded' ? 'OVERLOADED' : 'CODE_RUN_FAILED', `code run failed (${kind}): ${message}${captured}`, options)
    this.name = 'CodeRunFailedError'
    this.kind = kind
    this.logs = Object.freeze([...logs])
  }
}

/** The error a Code Mode program sees when a `tools.x()` call fails. */
export class ToolCallError extends Error {
  /** The tool whose call failed. */
  readonly toolName: string
  /** Why it failed, as a stable code (`TOOL_FAILED` when the failure carried none). */
  readonly code: string

  constructor(toolName: string, message: string, code: string = 'TOOL_FAILED') {
    super(message)
    this.name = 'ToolCallError'
    this.toolName = toolName
    this.code = code
  }
}

/** Who each denial code names: a program reads "`<tool>` was denied by …". */
const DENIERS: Readonly<Record<string, string>> = {
  DENIED_BY_GATE: 'policy',
  DENIED_BY_GUARD: 'a guard',
  DENIED_BY_APPROVAL: 'approval',
}

/**
 * The {@link ToolCallError} a program gets for a failed sub-call: the native failure's
 * code, and a message that says a denial was a denial and by what
 * (`delete_file was denied by policy: deleting is not allowed here`), since a gate's or
 * guard's reason alone reads like any other failure.
 */
export function toolCallErrorOf(toolName: string, error: { readonly message: string; readonly info?: { readonly name?: string; readonly code: string } }): ToolCallError {
  const code = error.info?.code ?? 'TOOL_FAILED'
  const by = Object.hasOwn(DENIERS, code) ? DENIERS[code] : undefined
  let message = error.message
  if (by !== undefined && !message.startsWith(`${toolName} was denied`)) {
    const prefix = `${toolName} was denied by ${by}`
    message = message === '' || message === `denied by ${by}` ? prefix : `${prefix}: ${message}`
  }
  return new ToolCallError(toolName, message, code)
}

/** An error as plain data, the only form in which errors cross a worker or HTTP boundary. */
export interface ErrorData {
  readonly name: string
  readonly message: string
  readonly code?: string
  readonly stack?: string
}

/**
 * Reads an unknown thrown value into {@link ErrorData} without running any code the
 * value owns beyond plain property reads of `Error` instances (no `toString`, no getters
 * on non-errors).
 */
export function toErrorData(error: unknown): ErrorData {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return {
      name: typeof error.name === 'string' ? error.name : 'Error',
      message: typeof error.message === 'string' ? error.message : '',
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof error.stack === 'string' ? { stack: error.stack } : {}),
    }
  }
  if (typeof error === 'string') return { name: 'Error', message: error }
  return { name: 'Error', message: `non-error thrown (${error === null ? 'null' : typeof error})` }
}

/** Formats violations into one message: `<prefix>: <path>: <message>; …`. */
export function formatViolations(prefix: string, violations: readonly SchemaViolation[]): string {
  if (violations.length === 0) return prefix
  const parts = violations.slice(0, 10).map((v) => `${v.path === '' ? '(root)' : v.path}: ${v.message}`)
  const more = violations.length > 10 ? `; and ${violations.length - 10} more` : ''
  return `${prefix}: ${parts.join('; ')}${more}`
}
