/**
 * One call on its way through the pipeline: what the stages read and write.
 * @module
 */
import { toErrorData } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type { RegisteredTool } from '../schema/tool-definition.js'
import type {
  AdditionalContext,
  ApprovalHandler,
  PreToolDecision,
  ScopeKey,
  ToolExecution,
  ToolExecutionResult,
  ToolExecutionToken,
  ToolFailure,
} from '../types.js'
import type { RegistryContext } from './context.js'
import type { InFlight } from './in-flight.js'
import type { CallSpan } from '../telemetry/telemetry.js'
import type { TraceCarrier } from '../telemetry/types.js'

/** The message of `ABORTED_BEFORE_DISPATCH`. */
export const ABORTED_BEFORE_MESSAGE = 'the call was cancelled before the tool ran'
/** The message of `ABORTED`. */
export const ABORTED_MESSAGE = 'the call was cancelled while the tool ran'

/**
 * What the pipeline reads of the registry's context: the options, whether the registry is
 * disposing, the layers (each call asks its agent's view), the hooks, the guards and the
 * calls in flight.
 */
export type PipelineCore = Pick<RegistryContext, 'options' | 'isDisposed' | 'layers' | 'hooks' | 'guards' | 'calls' | 'telemetry'>

/** What a dispatch (wrappers + body) produced. */
export type DispatchOutcome =
  | { readonly kind: 'value'; readonly value: unknown; readonly bodyInvoked: boolean }
  | { readonly kind: 'failure'; readonly result: ToolFailure }

/** The execution input as read once: either usable, or why not. */
interface ParsedInput {
  readonly ok: boolean
  readonly message: string
  readonly callId: string
  readonly name: string
  readonly args: unknown
  readonly signal: AbortSignal | undefined
  readonly agent: ScopeKey | undefined
  readonly parent: symbol | undefined
  readonly deadline: number | undefined
  readonly holdWallClock: (() => () => void) | undefined
  readonly approval: ApprovalHandler | undefined
  readonly trace: TraceCarrier | undefined
  readonly principal: string | undefined
  /** Set when the input has no `arguments`: why, naming a member it likely meant (`args`). */
  readonly argsMissing?: string
}

/** What a caller writes for `arguments` by habit (other SDKs' names for a call's input). */
const ARGUMENT_ALIASES: readonly string[] = ['args', 'argument', 'params', 'parameters', 'input']

/** Why an input carries no `arguments`; a member that looks meant for them is named. */
function missingArguments(input: Record<string, unknown>): string {
  const alias = Object.keys(input).find((key) => ARGUMENT_ALIASES.includes(key) || (key !== 'arguments' && key.toLowerCase() === 'arguments'))
  const hint = alias === undefined ? '' : ` (it has ${JSON.stringify(alias)}: did you mean "arguments"?)`
  return `the execution input has no arguments${hint}: pass arguments, a JSON object ({} for a tool that takes none)`
}

/** A thrown value as one line of text (its message, else its name). */
export function messageOf(error: unknown): string {
  const data = toErrorData(error)
  return data.message === '' ? data.name : data.message
}

function malformedInput(message: string, callId: unknown = '', name: unknown = ''): ParsedInput {
  return {
    ok: false,
    message,
    callId: typeof callId === 'string' ? callId : '',
    name: typeof name === 'string' ? name : '',
    args: undefined,
    signal: undefined,
    agent: undefined,
    parent: undefined,
    deadline: undefined,
    holdWallClock: undefined,
    approval: undefined,
    trace: undefined,
    principal: undefined,
  }
}

function readTrace(value: unknown): TraceCarrier | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { traceparent, tracestate } = value as Record<string, unknown>
  if (typeof traceparent !== 'string') return undefined
  return typeof tracestate === 'string' ? { traceparent, tracestate } : { traceparent }
}

/** A principal label: non-secret, bounded (the HTTP app's principal ids have this form). */
const PRINCIPAL_LABEL = /^[A-Za-z0-9_-]{1,64}$/

/** Reads the raw input once (a getter or Proxy trap runs at most once, here). Never throws. */
export function parseInput(raw: unknown): ParsedInput {
  try {
    if (typeof raw !== 'object' || raw === null) return malformedInput('the execution input must be an object')
    const r = raw as Record<string, unknown>
    const callId = r.callId
    const name = r.name
    const signal = r.signal
    const agent = r.agent
    const parent = r.parent
    const args = r.arguments
    const { deadline, holdWallClock, approval, principal } = r
    const trace = readTrace(r.trace)
    if (typeof callId !== 'string') return malformedInput('the execution input needs a string callId', callId, name)
    if (typeof name !== 'string') return malformedInput('the execution input needs a string name', callId, name)
    if (!(signal instanceof AbortSignal)) return malformedInput('the execution input needs an AbortSignal as signal', callId, name)
    if (agent !== undefined && typeof agent !== 'string') return malformedInput('the execution input agent must be a string', callId, name)
    if (parent !== undefined && typeof parent !== 'symbol') {
      return malformedInput('the execution input parent must be an execution token', callId, name)
    }
    if (deadline !== undefined && (typeof deadline !== 'number' || !Number.isFinite(deadline))) {
      return malformedInput('the execution input deadline must be a finite number (epoch ms)', callId, name)
    }
    if (holdWallClock !== undefined && typeof holdWallClock !== 'function') return malformedInput('the execution input holdWallClock must be a function', callId, name)
    if (approval !== undefined && typeof approval !== 'function') return malformedInput('the execution input approval must be a function', callId, name)
    if (principal !== undefined && (typeof principal !== 'string' || !PRINCIPAL_LABEL.test(principal))) {
      return malformedInput('the execution input principal must be 1–64 of A-Z a-z 0-9 _ -', callId, name)
    }
    return {
      ok: true,
      message: '',
      callId,
      name,
      args,
      signal,
      agent,
      parent,
      deadline,
      holdWallClock: holdWallClock as (() => () => void) | undefined,
      approval: approval as ApprovalHandler | undefined,
      trace,
      principal: principal as string | undefined,
      ...(args === undefined ? { argsMissing: missingArguments(r) } : {}),
    }
  } catch (error) {
    return malformedInput(`the execution input could not be read: ${messageOf(error)}`)
  }
}

/** The gate's starting decision. */
export const ALLOW_DECISION: PreToolDecision = Object.freeze({ kind: 'allow' })

/** One call's state, shared by the stages in order. */
export class PipelineCall {
  readonly core: PipelineCore
  readonly input: ParsedInput
  /** The lifecycle of the call (caller cancellation, scope disposal). */
  readonly life: InFlight
  /** The frozen view every listener, guard and the approval handler receive. */
  readonly execution: ToolExecution
  readonly agent: ScopeKey | undefined
  /** True for a direct call (no live parent): `presentationMeta` is computed only then. */
  readonly topLevel: boolean
  /** Set when the call was made through a disposed agent scope. */
  readonly scopeDisposed: boolean
  /** The enclosing call's id, for a nested call (the approval request's `parentCallId`). */
  readonly parentCallId: string | undefined
  /** Who decides this call's `ask`: its own handler, else the one its parent inherited, else none (the registry's). */
  readonly approval: ApprovalHandler | undefined
  /** The enclosing call's span (a program's sub-call is its child). */
  readonly parentSpan: CallSpan | undefined
  /** This call's span (set once the call is opened, when the registry has telemetry). */
  span: CallSpan | undefined
  /** Milliseconds this call held its clock while a person decided; `deadline` moves later by as much. */
  heldMs = 0
  /** Why the arguments cannot be validated (absent, or not lossless JSON), when they cannot. */
  readonly argsError: string | undefined
  /** The resolved tool (set by the `resolve` stage). */
  registered: RegisteredTool | undefined
  /** The arguments as the body receives them (after `validateArgs`). */
  typedArgs: unknown
  /** The strictest `tools/pre-execute` decision so far. */
  decision: PreToolDecision = ALLOW_DECISION
  /** Contexts the body deferred (in order). */
  readonly toolContexts: AdditionalContext[] = []
  /** What dispatch produced (set by the `dispatch` stage). */
  outcome: DispatchOutcome | undefined
  /** The result so far; final once a stage ended the call or the stages ran out. */
  result: ToolExecutionResult | undefined

  constructor(core: PipelineCore, input: ParsedInput, life: InFlight, scopeDisposed: boolean) {
    this.core = core
    this.input = input
    this.life = life
    this.scopeDisposed = scopeDisposed
    this.agent = input.agent
    let args: JsonValue = null
    let argsError: string | undefined
    if (input.ok) {
      try {
        args = snapshotLosslessJson(input.args)
      } catch (error) {
        argsError = input.argsMissing ?? `arguments are not lossless JSON: ${messageOf(error)}`
      }
    }
    this.argsError = argsError
    this.typedArgs = args
    const live = input.parent === undefined ? undefined : core.calls.liveTokens.get(input.parent)
    const parent = live === undefined ? undefined : (input.parent as ToolExecutionToken)
    this.topLevel = parent === undefined
    this.parentCallId = live?.callId
    this.approval = input.approval ?? live?.approval
    // A nested call acts for whoever asked for its parent (a program's sub-calls carry its run's principal).
    const principal = live === undefined ? input.principal : live.principal
    this.parentSpan = live?.span
    const execution = {
      token: Symbol('toolyard.execution') as ToolExecutionToken,
      callId: input.callId,
      name: input.name,
      arguments: args,
      get signal(): AbortSignal {
        return life.signal()
      },
    } as { -readonly [K in keyof ToolExecution]: ToolExecution[K] }
    if (input.agent !== undefined) execution.agent = input.agent
    if (parent !== undefined) execution.parent = parent
    if (principal !== undefined) execution.principal = principal
    const deadline = input.deadline
    if (deadline !== undefined) {
      // A getter: the time the call waited for a person was not charged, so its deadline moved.
      Object.defineProperty(execution, 'deadline', { enumerable: true, get: () => deadline + this.heldMs })
    }
    this.execution = Object.freeze(execution)
  }
}
