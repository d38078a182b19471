/**
 * Approval over MCP: an `ask` put to a client that declared `elicitation` (accept → allow);
 * other clients' asks are denied. Stateless endpoint, sticky routing (docs/mcp.md).
 *
 * @module
 */
import { renderApprovalArguments, renderApprovalPreview } from '../approvals/render.js'
import { renderApprovalPlan } from '../approvals/render-plan.js'
import { ToolError } from '../errors.js'
import type { ApprovalHandler, ApprovalRequest } from '../types.js'
import { isRecord } from '../util/guards.js'

/** The prefix of the session ids issued to clients that declared form elicitation. */
const ELICITING_SESSION_PREFIX = 'toolyard-elicit-'

const SESSION_PATTERN = /^toolyard-elicit-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The protocol revisions that know `elicitation/create` (it arrived in 2025-06-18). */
const ELICITING_PROTOCOLS: ReadonlySet<string> = new Set(['2025-06-18', '2025-11-25'])

/**
 * The session id `initialize` answers with, when the client declared elicitation in a
 * form it can answer (`{}` or `{ form: … }`; a URL-only client cannot confirm a call) and
 * the negotiated protocol has it. `undefined` otherwise: the endpoint stays sessionless.
 */
export function elicitingSession(params: unknown, protocolVersion: string): string | undefined {
  if (!ELICITING_PROTOCOLS.has(protocolVersion) || !isRecord(params) || !isRecord(params.capabilities)) return undefined
  const elicitation = params.capabilities.elicitation
  if (!isRecord(elicitation)) return undefined
  const formMode = Object.keys(elicitation).length === 0 || Object.hasOwn(elicitation, 'form')
  return formMode ? `${ELICITING_SESSION_PREFIX}${crypto.randomUUID()}` : undefined
}

/** The session of a request whose client declared elicitation, else `undefined`. */
export function elicitingSessionOf(request: Request): string | undefined {
  const session = request.headers.get('Mcp-Session-Id')
  return session !== null && SESSION_PATTERN.test(session) ? session : undefined
}

/** Sends one JSON-RPC message to the client on the open event stream. */
export type SendToClient = (message: Readonly<Record<string, unknown>>) => void

interface Pending {
  readonly session: string
  readonly settle: (answer: { readonly result?: unknown; readonly error?: unknown }) => void
}

/**
 * A question, as the elicitation's message shows it to a person: the arguments as the
 * shared approval renderer shows them on every surface (declared parameters in schema
 * order, long values as length + head + tail, undeclared keys flagged), never a prefix
 * of the caller's JSON; then the tool's preview of the call's effect, when it has one.
 */
export function questionText(request: ApprovalRequest): string {
  const { name, arguments: args } = request.execution
  // A plan request: the program and its planned calls, rendered bounded by the shared plan renderer.
  if (request.kind === 'plan' && request.plan !== undefined) return `Allow this program to run (${request.reason ?? 'it calls tools that ask'})?\n${renderApprovalPlan(request.plan)}`
  const why = request.reason === undefined || request.reason === '' ? '' : ` (${request.reason})`
  const rendered = renderApprovalArguments({ name, parameters: request.parameters }, args)
  // What the call will do, from the tool (already rendered by the registry; rendered again: the handler is public).
  const effect = request.preview === undefined ? '' : `\nWhat it will do:\n${renderApprovalPreview(request.preview)}`
  return `Allow the tool call ${name}${why}?\nArguments:\n${rendered.text}${effect}`
}

function denied(message: string): ToolError {
  return new ToolError('DENIED_BY_APPROVAL', message)
}

/** What an `elicitation/create` answer means for the call. */
function verdict(name: string, answer: { readonly result?: unknown; readonly error?: unknown }): true {
  if (answer.error !== undefined) {
    const message = isRecord(answer.error) && typeof answer.error.message === 'string' ? answer.error.message : 'an error'
    throw denied(`${name} was denied: it needed approval and the MCP client could not ask (it answered ${message})`)
  }
  const action = isRecord(answer.result) ? answer.result.action : undefined
  if (action === 'accept') return true
  if (action === 'decline') throw denied(`${name} was denied by the MCP client's user (declined)`)
  if (action === 'cancel') throw denied(`${name} was denied by the MCP client's user (dismissed the request)`)
  throw denied(`${name} was denied: it needed approval and the MCP client answered with no valid action`)
}

/**
 * The pending `elicitation/create` questions of one MCP endpoint, keyed by their
 * JSON-RPC id. Every question settles exactly once: answered, timed out, or withdrawn
 * when its call is cancelled (the client went away).
 */
export class ElicitationChannel {
  readonly #pending = new Map<string, Pending>()
  /** The `tools/call`s of eliciting sessions in flight, by session and request id: `notifications/cancelled` reaches them. */
  readonly #calls = new Map<string, AbortController>()
  readonly #timeoutMs: number

  readonly #plans: boolean

  /** `plans`: whether this channel's askers take plan requests (`McpAppOptions.elicitationPlans`). */
  constructor(timeoutMs: number, plans = false) {
    this.#timeoutMs = timeoutMs
    this.#plans = plans
  }

  /** Open questions and tracked calls: both must fall back to 0 when their calls end (a leak check). */
  get size(): { readonly questions: number; readonly calls: number } {
    return { questions: this.#pending.size, calls: this.#calls.size }
  }

  /**
   * Tracks one `tools/call` of an eliciting session, so the client's
   * `notifications/cancelled` for it (the SDK sends one when a call is aborted or times
   * out; its stream stays open) cancels the call and withdraws its question. Call `done`
   * when the call settled.
   */
  track(session: string, requestId: string | number): { readonly signal: AbortSignal; readonly done: () => void } {
    const key = `${session}\n${JSON.stringify(requestId)}`
    const controller = new AbortController()
    this.#calls.set(key, controller)
    return {
      signal: controller.signal,
      done: () => {
        if (this.#calls.get(key) === controller) this.#calls.delete(key)
      },
    }
  }

  /** `notifications/cancelled` from `session`: cancels the tracked call it names (anything else is ignored). */
  cancel(session: string | undefined, params: unknown): void {
    if (session === undefined || !isRecord(params)) return
    const requestId = params.requestId
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return
    this.#calls.get(`${session}\n${JSON.stringify(requestId)}`)?.abort(new DOMException('the MCP client cancelled the call', 'AbortError'))
  }

  /**
   * Takes a client's JSON-RPC response when it answers one of our questions from the same
   * session; returns whether it did (anything else is ignored, as before).
   */
  receive(message: Record<string, unknown>, session: string | undefined): boolean {
    const id = message.id
    if (typeof id !== 'string' || Object.hasOwn(message, 'method')) return false
    const pending = this.#pending.get(id)
    if (pending === undefined || pending.session !== session) return false
    pending.settle({ ...(Object.hasOwn(message, 'error') ? { error: message.error } : { result: message.result }) })
    return true
  }

  /** The approval handler of one `tools/call` whose event stream is open to an eliciting client. */
  asker(session: string, send: SendToClient): ApprovalHandler {
    // acceptsPlans (opt-in): the question renders a plan request (one elicitation per program; docs/approvals.md).
    const handler: ApprovalHandler = (request) =>
      new Promise<boolean>((resolve, reject) => {
        const id = `toolyard-elicitation-${crypto.randomUUID()}`
        const name = request.execution.name
        const signal = request.execution.signal
        const finish = (): void => {
          this.#pending.delete(id)
          clearTimeout(timer)
          signal.removeEventListener('abort', onAbort)
        }
        const onAbort = (): void => {
          finish()
          reject(denied(`the approval request for ${name} was withdrawn: the call was cancelled`))
        }
        const timer = setTimeout(() => {
          finish()
          reject(denied(`${name} was denied by timeout: the MCP client did not answer within ${this.#timeoutMs} ms`))
        }, this.#timeoutMs)
        this.#pending.set(id, {
          session,
          settle: (answer) => {
            finish()
            try {
              resolve(verdict(name, answer))
            } catch (error) {
              reject(error)
            }
          },
        })
        if (signal.aborted) {
          onAbort()
          return
        }
        signal.addEventListener('abort', onAbort, { once: true })
        send({
          jsonrpc: '2.0',
          id,
          method: 'elicitation/create',
          params: { message: questionText(request), requestedSchema: { type: 'object', properties: {} } },
        })
      })
    return Object.freeze(Object.assign(handler, { acceptsPlans: this.#plans }))
  }
}

/**
 * The approval handler for a client that cannot be asked: every `ask` is denied, and
 * the message says that approval was needed and why nobody could give it.
 */
export function cannotAsk(why: string): ApprovalHandler {
  return (request) => {
    const reason = request.reason === undefined || request.reason === '' ? '' : ` (${request.reason})`
    throw denied(`${request.execution.name} was denied: it needs approval${reason}, and ${why}`)
  }
}
