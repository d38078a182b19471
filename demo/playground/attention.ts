/**
 * A request that waits for a person cannot be missed (issue 35, item 1): the tab title
 * counts the pending Allow / Deny panels on the page, a pinned bar names the first with
 * a link to it, a new one scrolls into view, and while the page's own call waits the
 * status line says what waits ("Waiting for your approval: write_file README.md").
 *
 * @module
 */
import { h, replaceChildren } from './dom.js'

/** Options of {@link watchAttention}. */
export interface AttentionOptions {
  /** The pinned bar (hidden while nothing waits). */
  readonly bar: HTMLElement
  /** The status line: while it says `running` and the page's own call waits, it says what waits instead. */
  readonly status: HTMLElement
  /** Where the page's own calls show their panels (the run's cards, the plan box). */
  readonly own: (panel: Element) => boolean
  /** Where the page's own call runs, for the status line (`in this tab`, `on the server`). */
  readonly where: () => string
}

/** The handle of {@link watchAttention}. */
export interface Attention {
  /** How many requests wait on the page now. */
  readonly count: number
  /** Recomputes now (the observer does it on the next frame after any change). */
  update(): void
  /** Scrolls the first waiting panel into view. */
  show(): void
}

const PENDING = '[data-testid="approval"][data-state="pending"]'

/** The pending panels a person can see: not inside a hidden part of the page. */
function pendingPanels(): HTMLElement[] {
  return [...document.querySelectorAll<HTMLElement>(PENDING)].filter((panel) => panel.closest('[hidden]') === null)
}

function subjectOf(panel: Element): string {
  return panel.getAttribute('data-subject') ?? 'a tool call'
}

function inView(element: Element): boolean {
  const box = element.getBoundingClientRect()
  return box.top >= 0 && box.bottom <= window.innerHeight
}

/**
 * Watches the page for pending approval panels (any surface: a run's cards, a plan, a
 * native call, the "Waiting for you" panel) and keeps the title, the pinned bar and the
 * status line in step with them.
 */
export function watchAttention(options: AttentionOptions): Attention {
  const { bar, status, own, where } = options
  const baseTitle = document.title
  const revealed = new Set<string>()
  /** The status line as it was before it said what waits, restored once nothing of the page's own waits. */
  let saved: { readonly state: string; readonly nodes: Node[] } | undefined
  let count = 0
  let frame = 0

  const show = (): void => {
    const first = pendingPanels()[0]
    first?.scrollIntoView({ block: 'center' })
    first?.querySelector<HTMLButtonElement>('[data-testid="approve"]')?.focus({ preventScroll: true })
  }

  const drawStatus = (mine: readonly HTMLElement[]): void => {
    const state = status.dataset.state
    if (mine.length === 0) {
      if (state === 'waiting' && saved !== undefined) {
        status.dataset.state = saved.state
        status.replaceChildren(...saved.nodes)
      }
      delete status.dataset.waitingFor
      saved = undefined
      return
    }
    if (state !== 'running' && state !== 'waiting') return
    const more = mine.length > 1 ? ` (and ${mine.length - 1} more)` : ''
    const key = `${subjectOf(mine[0] as HTMLElement)}|${more}|${where()}`
    // Redrawn only when it changes: the observer hears this very redraw.
    if (state === 'waiting' && status.dataset.waitingFor === key) return
    if (state === 'running') saved = { state, nodes: [...status.childNodes] }
    status.dataset.state = 'waiting'
    status.dataset.waitingFor = key
    replaceChildren(status, `Waiting for your approval ${where()}: `, h('strong', { 'data-testid': 'status-subject' }, subjectOf(mine[0] as HTMLElement)), more, ' — Allow or Deny on its card below')
  }

  const update = (): void => {
    frame = 0
    const panels = pendingPanels()
    count = panels.length
    document.title = count === 0 ? baseTitle : `(${count}) ${baseTitle}`
    const barKey = count === 0 ? '' : `${count}|${subjectOf(panels[0] as HTMLElement)}`
    if (bar.dataset.key !== barKey) {
      bar.dataset.key = barKey
      bar.hidden = count === 0
      bar.dataset.count = String(count)
    }
    if (count > 0 && bar.dataset.drawn !== barKey) {
      bar.dataset.drawn = barKey
      const first = panels[0] as HTMLElement
      const jump = h('button', { type: 'button', class: 'primary', 'data-testid': 'attention-show' }, 'Show')
      jump.addEventListener('click', show)
      replaceChildren(
        bar,
        h('span', { class: 'dot', 'aria-hidden': 'true' }),
        count === 1 ? 'Waiting for your approval: ' : `${count} requests wait for your approval: `,
        h('strong', { 'data-testid': 'attention-subject' }, subjectOf(first)),
        count === 1 ? '' : ' and others',
        ' ',
        jump,
      )
    }
    // A request that just arrived comes into view once (never again: the person may scroll away).
    const fresh = panels.filter((panel) => !revealed.has(panel.dataset.approvalId ?? ''))
    for (const panel of fresh) revealed.add(panel.dataset.approvalId ?? '')
    const first = fresh[0]
    if (first !== undefined && !inView(first)) first.scrollIntoView({ block: 'center' })
    drawStatus(panels.filter(own))
  }

  const schedule = (): void => {
    if (frame === 0) frame = requestAnimationFrame(update)
  }
  new MutationObserver(schedule).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state', 'hidden'] })
  schedule()
  return {
    get count() {
      return count
    },
    update,
    show,
  }
}
