/**
 * "Waiting for you": every request on the server that waits for a person
 * (`GET /v1/approvals`), whoever's run made it — a run this page started before a
 * reload, a run resumed after a server restart, another client's. Each shows the tool,
 * the bounded `summary` the server rendered, the reason, which run asks and a countdown,
 * with Allow / Deny (`POST /v1/approvals/:id`), drawn by the same renderer as a call's
 * card (approval-card.ts), plan cards included.
 *
 * A request of a run or native call this page is running now is counted and named, with
 * a link to its call's card, but has no buttons here: the card shows it next to its
 * timeline bar and its siblings, and one request with two sets of buttons would only
 * invite a second, refused decision. So the count always agrees with what waits.
 *
 * After a decision the run goes on on the server. When the page started it (known-runs.ts
 * remembers `/v1/runs` ids across reloads) the panel follows its status to the end
 * (`GET /v1/runs/:id`); otherwise it says the run continues on the server.
 *
 * Server text is only ever set as text (dom.ts's `h`), never as markup.
 *
 * @module
 */
import type { PendingApproval } from '../../src/approvals/types.js'
import { approvalStateOf, approvalSubject, renderApprovalPanel } from './approval-card.js'
import { h, replaceChildren, showJson } from './dom.js'
import { knownRunId } from './known-runs.js'
import type { ServerBackend, ServerRunView, WaitingApprovals } from './server-backend.js'

/** Options of {@link createWaitingPanel}. */
export interface WaitingPanelOptions {
  readonly server: ServerBackend
  /** The element the panel draws into (its children are the panel's). */
  readonly box: HTMLElement
  /** Whether the panel is shown: the page runs on the server and the server is up. In the tab it is hidden (the tab's broker dies with the tab). */
  readonly visible: () => boolean
  /** How often the list is fetched while visible. Default {@link WAITING_REFRESH_MS}. */
  readonly refreshMs?: number
  /** At most this many requests are drawn; the rest are counted. Default {@link MAX_WAITING_SHOWN}. */
  readonly maxShown?: number
}

/** The panel's handle. */
export interface WaitingPanel {
  /** Shows or hides it per `visible()`, and refreshes when shown. */
  update(): void
  /** Fetches the list now (coalesced with one in flight); nothing while hidden. */
  refresh(): Promise<void>
  /** Stops the timers. */
  dispose(): void
}

/** Default refresh interval while the panel is visible. */
export const WAITING_REFRESH_MS = 2_000
/** Default number of requests drawn (the oldest first); the rest are counted. */
export const MAX_WAITING_SHOWN = 50
/** Decisions taken here that stay listed, with their runs' status (the newest). */
export const MAX_DECIDED_SHOWN = 10
/** How much of a followed run's result is shown. */
const MAX_RESULT_CHARS = 2_000
/** How often, and for how long at most, a decided run's status is looked up. */
const RUN_POLL_MS = 1_000
const RUN_FOLLOW_MS = 10 * 60_000

const ENDED = new Set<ServerRunView['status']>(['done', 'failed', 'cancelled'])

/** Which run asks: a plan's `callId` is its `run_code` call, a sub-call's `parentCallId` is. */
function runCallIdOf(request: PendingApproval): string | undefined {
  return request.kind === 'plan' ? request.callId : request.parentCallId
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`
}

function resultText(run: ServerRunView): string {
  const result = run.result
  if (result === undefined) return ''
  if (result.isError) return cut(result.error.message, MAX_RESULT_CHARS)
  const value = result.value as { result?: unknown } | undefined
  return cut(value?.result === undefined ? '(no return value)' : showJson(value.result), MAX_RESULT_CHARS)
}

/** Creates the panel in `options.box`. */
export function createWaitingPanel(options: WaitingPanelOptions): WaitingPanel {
  const { server, box, visible } = options
  const maxShown = options.maxShown ?? MAX_WAITING_SHOWN
  const count = h('span', { class: 'count', 'data-testid': 'waiting-count' }, '')
  const note = h('p', { class: 'hint small', 'data-testid': 'waiting-note' }, 'Requests on the server that wait for a person, from any run.')
  const list = h('div', { class: 'waiting-list', 'data-testid': 'waiting-list' })
  const ownList = h('div', { class: 'waiting-own-list', 'data-testid': 'waiting-own-list' })
  const more = h('p', { class: 'hint small', 'data-testid': 'waiting-more', hidden: true })
  // The server's listing stopped at a bound (the oldest 500): a person must know that more wait than they see.
  const unlisted = h('p', { class: 'hint small', 'data-testid': 'waiting-truncated', hidden: true }, 'More requests wait on the server than it listed (it lists the oldest 500): decide some to see the rest.')
  const decided = h('div', { class: 'waiting-decided', 'data-testid': 'waiting-decided' })
  replaceChildren(box, h('h3', {}, 'Waiting for you ', count), note, ownList, list, more, unlisted, decided)
  // Drawn items by request id: an item is never redrawn while it waits (no button pulled from under a pointer).
  const items = new Map<string, HTMLElement>()
  let inFlight: Promise<void> | undefined
  let again = false

  function followRun(runId: string, line: HTMLElement): void {
    const until = Date.now() + RUN_FOLLOW_MS
    const look = async (): Promise<void> => {
      // Stops once the entry left the page (pushed out of the decided list).
      if (!line.isConnected || Date.now() > until) return
      try {
        const run = await server.runStatus(runId)
        const text = resultText(run)
        line.dataset.status = run.status
        replaceChildren(line, `run ${runId}: ${run.status}`, text === '' ? null : h('pre', { class: 'approval-args', 'data-testid': 'waiting-run-result' }, text))
        if (ENDED.has(run.status)) return
      } catch (error) {
        line.textContent = `run ${runId}: ${error instanceof Error ? error.message : String(error)} (looking again)`
      }
      setTimeout(() => void look(), RUN_POLL_MS)
    }
    void look()
  }

  function recordDecision(request: PendingApproval, decision: 'allow' | 'deny'): void {
    const runId = knownRunId(runCallIdOf(request))
    const line = h('div', { class: 'hint small', 'data-testid': 'waiting-run-status' }, runId === undefined ? 'decided; the run continues on the server' : `run ${runId}: looking up its status…`)
    const entry = h(
      'div',
      { class: `waiting-item decided ${decision}`, 'data-testid': 'waiting-decided-item', 'data-approval-id': request.id, 'data-decision': decision },
      h('div', { class: 'meta' }, h('strong', {}, request.name), decision === 'allow' ? ' allowed' : ' denied'),
      line,
    )
    decided.prepend(entry)
    while (decided.children.length > MAX_DECIDED_SHOWN) decided.lastElementChild?.remove()
    if (runId !== undefined) followRun(runId, line)
  }

  function renderItem(request: PendingApproval): HTMLElement {
    const runCallId = runCallIdOf(request)
    const runId = knownRunId(runCallId)
    const which = runCallId === undefined ? `call ${request.callId}` : runId === undefined ? `run call ${runCallId}` : `run ${runId} (started from this page)`
    const decide = async (decision: 'allow' | 'deny'): Promise<void> => {
      await server.decide(request.id, decision)
      items.get(request.id)?.remove()
      items.delete(request.id)
      recordDecision(request, decision)
      void refresh()
    }
    return h(
      'div',
      { class: 'waiting-item', 'data-testid': 'waiting-item', 'data-approval-id': request.id },
      h('div', { class: 'meta' }, h('strong', {}, request.name), ' · ', which),
      renderApprovalPanel(approvalStateOf(request), decide),
    )
  }

  /** The page's own waiting calls: named, counted, and a link to the card that has their buttons. */
  function drawOwn(mine: readonly PendingApproval[]): void {
    const key = mine.map((request) => request.id).join(',')
    if (ownList.dataset.key === key) return
    ownList.dataset.key = key
    replaceChildren(
      ownList,
      mine.map((request) => {
        const jump = h('button', { type: 'button', 'data-testid': 'waiting-own-show' }, 'Show')
        jump.addEventListener('click', () => {
          const id = CSS.escape(request.id)
          document.querySelector(`#cards [data-approval-id="${id}"], [data-testid="plan"] [data-approval-id="${id}"]`)?.scrollIntoView({ block: 'center' })
        })
        return h(
          'div',
          { class: 'waiting-own', 'data-testid': 'waiting-own', 'data-approval-id': request.id },
          h('strong', {}, approvalSubject(request)),
          " · this page's running call: Allow or Deny on its card below ",
          jump,
        )
      }),
    )
  }

  function draw(pending: WaitingApprovals): void {
    const mine = pending.filter((request) => server.owns(request)).sort((a, b) => a.requestedAt - b.requestedAt)
    drawOwn(mine)
    const others = pending.filter((request) => !server.owns(request)).sort((a, b) => a.requestedAt - b.requestedAt)
    const shown = others.slice(0, maxShown)
    const keep = new Set(shown.map((request) => request.id))
    for (const [id, element] of items) {
      if (!keep.has(id)) {
        element.remove()
        items.delete(id)
      }
    }
    const ordered = shown.map((request) => {
      let element = items.get(request.id)
      if (element === undefined) {
        element = renderItem(request)
        items.set(request.id, element)
      }
      return element
    })
    if (ordered.length !== list.children.length || ordered.some((element, i) => list.children[i] !== element)) replaceChildren(list, ordered)
    const total = others.length + mine.length
    count.textContent = pending.truncated === true ? `(${total}+)` : `(${total})`
    box.dataset.count = String(total)
    unlisted.hidden = pending.truncated !== true
    const rest = others.length - shown.length
    more.hidden = rest <= 0
    more.textContent = rest > 0 ? `… and ${rest} more waiting (the oldest ${maxShown} are shown; decide some to see the rest)` : ''
    note.textContent =
      total === 0
        ? 'Nothing on the server waits for you.'
        : others.length === 0
          ? `${mine.length === 1 ? '1 request waits' : `${mine.length} requests wait`} for you: this page's running call (Allow / Deny on its card below).`
          : "Requests on the server that wait for a person, from any run (this page's running call shows its own on its card)."
  }

  async function load(): Promise<void> {
    try {
      draw(await server.pendingApprovals())
    } catch (error) {
      note.textContent = `The waiting requests could not be listed: ${error instanceof Error ? error.message : String(error)}`
    }
  }

  function refresh(): Promise<void> {
    if (!visible()) return Promise.resolve()
    if (inFlight !== undefined) {
      again = true
      return inFlight
    }
    inFlight = load().finally(() => {
      inFlight = undefined
      if (again) {
        again = false
        void refresh()
      }
    })
    return inFlight
  }

  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') void refresh()
  }, options.refreshMs ?? WAITING_REFRESH_MS)
  const onVisibility = (): void => {
    if (document.visibilityState === 'visible') void refresh()
  }
  document.addEventListener('visibilitychange', onVisibility)

  return {
    update(): void {
      box.hidden = !visible()
      void refresh()
    },
    refresh,
    dispose(): void {
      clearInterval(timer)
      document.removeEventListener('visibilitychange', onVisibility)
    },
  }
}
