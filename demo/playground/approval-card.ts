/**
 * A pending approval as the page shows it: the reason the tool asks, what exactly it
 * asks (the broker's `summary`, the same rendering `GET /v1/approvals` and the MCP
 * elicitation show), what it will change (the tool's `preview`), a countdown to its expiry, and Allow / Deny buttons that answer it
 * (in the tab's broker, or with `POST /v1/approvals/:id` on the server). Once answered
 * it says how it ended.
 *
 * @module
 */
import type { PendingApproval } from '../../src/approvals/types.js'
import { h } from './dom.js'

/** One call's approval as the page tracks it. */
export interface ApprovalState {
  readonly id: string
  /** `'plan'`: the whole program before it runs (its code, its planned calls); `'call'` or absent: one tool call. */
  readonly kind?: 'call' | 'plan'
  readonly reason?: string
  /**
   * The arguments as the person must read them (`PendingApproval.summary`: declared
   * parameters in order, long values as length + head + tail, undeclared keys flagged).
   */
  readonly summary?: string
  /** What the call will do, from the tool's preview (`PendingApproval.preview`: a diff, "overwrites N lines"), rendered by the server. */
  readonly preview?: string
  /** What waits, in a few words (`write_file README.md`): the status line, the pinned bar and the tab title say it. */
  readonly subject?: string
  readonly expiresAt: number
  state: 'pending' | 'allow' | 'deny' | 'expired' | 'withdrawn'
  /** Why a decision could not be applied (e.g. it expired meanwhile). */
  problem?: string
}

const ENDED: Readonly<Record<Exclude<ApprovalState['state'], 'pending'>, string>> = {
  allow: 'allowed',
  deny: 'denied',
  expired: 'expired: nobody decided in time (denied)',
  withdrawn: 'withdrawn: the call was cancelled',
}

/** Longest subject shown; the card below has the whole call. */
const MAX_SUBJECT_CHARS = 80

/** A call's arguments as one short line: controls and bidi characters escaped, so a path cannot disguise itself. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  const safe = text.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
  return safe.length > MAX_SUBJECT_CHARS ? `${safe.slice(0, MAX_SUBJECT_CHARS)}… (${safe.length} characters)` : safe
}

/** What waits, in a few words: `write_file README.md`, or `this program (run_code)` for a plan. */
export function approvalSubject(request: Pick<PendingApproval, 'kind' | 'name' | 'arguments'>): string {
  if (request.kind === 'plan') return `this program (${oneLine(String(request.name))})`
  const args = request.arguments
  const path = typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>).path : undefined
  return typeof path === 'string' ? `${oneLine(String(request.name))} ${oneLine(path)}` : oneLine(String(request.name))
}

/** The page's record of a request that waits for a decision. */
export function approvalStateOf(request: PendingApproval): ApprovalState {
  return {
    id: request.id,
    subject: approvalSubject(request),
    ...(typeof request.preview === 'string' ? { preview: request.preview } : {}),
    // A broker older than plan approval sends no kind: a call.
    kind: request.kind === 'plan' ? 'plan' : 'call',
    ...(request.reason === undefined ? {} : { reason: request.reason }),
    ...(typeof request.summary === 'string' ? { summary: request.summary } : {}),
    expiresAt: request.expiresAt,
    state: 'pending',
  }
}

function secondsLeft(expiresAt: number): string {
  return `expires in ${Math.max(0, Math.ceil((expiresAt - Date.now()) / 1000))} s`
}

/**
 * The approval panel of one call. `decide` answers it; while it runs the buttons are
 * disabled, and a refusal (expired, already decided) is shown in the panel.
 */
export function renderApprovalPanel(approval: ApprovalState, decide: (decision: 'allow' | 'deny') => Promise<void>): HTMLElement {
  if (approval.state !== 'pending') {
    return h(
      'div',
      { class: `approval ${approval.state}`, 'data-testid': 'approval', 'data-state': approval.state },
      h('strong', {}, 'Approval '),
      ENDED[approval.state],
    )
  }
  const countdown = h('span', { class: 'countdown' }, secondsLeft(approval.expiresAt))
  // Updates itself in place (the card is not redrawn while nothing changes); stops once
  // detached after having been shown, or once the request expired.
  let shown = false
  const timer = setInterval(() => {
    shown ||= countdown.isConnected
    if ((shown && !countdown.isConnected) || Date.now() > approval.expiresAt + 1_000) clearInterval(timer)
    else countdown.textContent = secondsLeft(approval.expiresAt)
  }, 500)
  const problem = h('div', { class: 'err' }, approval.problem ?? '')
  const allow = h('button', { type: 'button', class: 'primary', 'data-testid': 'approve' }, 'Allow')
  const deny = h('button', { type: 'button', class: 'danger', 'data-testid': 'deny' }, 'Deny')
  const answer = (decision: 'allow' | 'deny'): void => {
    allow.disabled = true
    deny.disabled = true
    decide(decision).catch((error: unknown) => {
      approval.problem = error instanceof Error ? error.message : String(error)
      problem.textContent = approval.problem
    })
  }
  allow.addEventListener('click', () => answer('allow'))
  deny.addEventListener('click', () => answer('deny'))
  return h(
    'div',
    {
      class: `approval pending ${approval.kind ?? 'call'}`,
      'data-testid': 'approval',
      'data-state': 'pending',
      'data-kind': approval.kind ?? 'call',
      'data-approval-id': approval.id,
      'data-subject': approval.subject,
    },
    // A plan card: the summary is the program with line numbers and its planned calls; Allow pre-approves them for this run.
    h('div', {}, h('strong', {}, approval.kind === 'plan' ? 'This program needs your approval before it runs' : 'Needs your approval'), approval.reason === undefined ? null : ` — ${approval.reason}`, ' ', countdown),
    // Text, never markup; the renderer already escaped anything that could fake a line.
    approval.summary === undefined ? null : h('pre', { class: 'approval-args', 'data-testid': 'approval-args' }, approval.summary),
    // What it will do (the tool's preview, e.g. "overwrites 12 lines" and the diff): read before Allow.
    approval.preview === undefined
      ? null
      : h('div', { class: 'approval-preview' }, h('div', { class: 'label' }, 'What it will do'), h('pre', { class: 'approval-args preview', 'data-testid': 'approval-preview' }, approval.preview)),
    h('div', { class: 'actions' }, allow, deny),
    problem,
  )
}
