/**
 * The dispatch timeline: each sub-call of a run drawn as a bar over time, one row per
 * sub-call in submission order, coloured by how the registry scheduled it. Parallel
 * calls overlap; an exclusive call stands alone with nothing beside it — the barrier
 * is visible as the gap in everyone else's bars. A call waiting for a person's approval
 * is drawn striped in amber until it is decided; a denied call is drawn apart from one
 * that failed.
 *
 * @module
 */
import type { SubCallRecord } from './cards.js'
import { h, replaceChildren, syncChildren } from './dom.js'
import { callState, hiddenText, type DrawBudget, type HiddenCalls } from './run-calls.js'

/** Bars at least this share of the track carry their label inside; shorter ones beside them. */
const LABEL_INSIDE_PERCENT = 40

/**
 * Where a bar's label goes: inside a long bar; beside a short one, after it, or before it
 * when the bar ends in the right part of the track. A label is never cut to fit its bar
 * ("read_file · 8…").
 */
export function labelPlacement(left: number, width: number): { readonly where: 'inside' } | { readonly where: 'after' | 'before'; readonly style: string } {
  if (width >= LABEL_INSIDE_PERCENT) return { where: 'inside' }
  if (left + width <= 100 - LABEL_INSIDE_PERCENT) return { where: 'after', style: `left:calc(${left + width}% + 4px)` }
  return { where: 'before', style: `right:calc(${100 - left}% + 4px)` }
}

function niceStep(span: number): number {
  const raw = span / 6
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-3)))
  for (const m of [1, 2, 5, 10]) if (raw <= m * power) return m * power
  return 10 * power
}

/** A drawn row and what it was drawn from: updated in place while its shape holds. */
interface DrawnRow {
  readonly row: HTMLElement
  readonly bar: HTMLElement
  /** The element that holds the label's text: the bar, or the label beside it. */
  readonly text: HTMLElement
  readonly shape: string
  left: string
  width: string
  labelStyle: string
  label: string
}

/** Rows by record (a run's records are its own objects: a new run never reuses a row). */
const drawnRows = new WeakMap<SubCallRecord, DrawnRow>()
/** Each timeline's axis and summary row, kept across frames. */
const frames = new WeakMap<HTMLElement, { readonly axis: HTMLElement; span: number; more?: HTMLElement }>()

/**
 * Draws `records` into `target`; `now` (ms since run start) extends running bars. The calls
 * of the run not drawn (past the page's bound, run-calls.ts) are one summary row at the end,
 * with their counts as data attributes.
 *
 * Called each animation frame while a run goes on, so a frame touches only what changed: a
 * row is built once and then moved and relabelled in place (its bar's position, its label's
 * text) until its state or its label's side changes; the axis is redrawn when the span
 * changes; only the rows that changed are removed or inserted (syncChildren). With a
 * `budget`, a row whose shape changed keeps its last drawing once the budget is spent (a
 * row never drawn is built whatever the budget: the caller bounds the new records). With
 * `growFrom` (the span drawn last, while a flood runs) the axis only grows, by doubling
 * ({@link growingSpan}). Returns the span drawn.
 */
export function renderTimeline(
  target: HTMLElement,
  records: readonly SubCallRecord[],
  now: number,
  hidden?: HiddenCalls,
  budget?: DrawBudget,
  growFrom?: number,
): number {
  if (records.length === 0) {
    replaceChildren(target, h('p', { class: 'hint small' }, 'No sub-calls: the program called no tools.'))
    return 0
  }
  let latest = Math.max(1, now)
  for (const record of records) latest = Math.max(latest, record.end ?? now)
  const span = growFrom === undefined ? axisSpan(latest) : growingSpan(latest, growFrom)
  let frame = frames.get(target)
  if (frame === undefined) {
    frame = { axis: h('div', { class: 'axis' }), span: 0 }
    frames.set(target, frame)
  }
  if (frame.span !== span) {
    frame.span = span
    replaceChildren(frame.axis, axisTicks(span))
  }
  const rows = records.map((record) => drawRow(record, span, now, budget))
  const children: HTMLElement[] = [frame.axis, ...rows]
  if (hidden !== undefined && hidden.count > 0) {
    frame.more = updateHiddenRow(frame.more, hidden, 'timeline-more')
    children.push(frame.more)
  }
  syncChildren(target, children)
  return span
}

/**
 * The axis's length for a run whose latest moment is `latest`: rounded up to half a tick
 * step (under 21 % longer: half a step is under 0.21 × `latest`), so that while a run goes
 * on the span changes a few dozen times, not every frame: between two changes no settled
 * bar moves and a frame draws next to nothing.
 */
export function axisSpan(latest: number): number {
  const half = niceStep(latest) / 2
  return Math.ceil(latest / half - 1e-9) * half
}

/**
 * The axis's length while a flood runs (more calls than the page draws, redrawn every 200 ms),
 * `previous` the length drawn last: it holds until the run passes it, then at least doubles.
 * A change of length moves every drawn bar (style, layout and paint of every rendered row:
 * most of a flood's redraw), and {@link axisSpan}'s half step (250 ms for a run of 1–3 s)
 * changes at nearly every redraw; doubling changes it log2(length) times in a run, and the
 * bars still fill more than 40 % of the track (under 2 × 1.21 × `latest`). The draw after the
 * run has ended fits the axis again ({@link axisSpan}).
 */
export function growingSpan(latest: number, previous: number): number {
  if (latest <= previous) return previous
  return axisSpan(Math.max(latest, previous * 2))
}

function axisTicks(span: number): HTMLElement[] {
  const step = niceStep(span)
  const ticks: HTMLElement[] = []
  for (let t = 0; t <= span + 1e-9; t += step) {
    const at = (t / span) * 100
    // A label near the right end ends at its tick instead of centring on it: never cut by the box's edge.
    ticks.push(h('span', { style: `left:${at}%${at > 90 ? ';transform:translateX(-100%)' : ''}` }, `${Number(t.toFixed(3))} ms`))
  }
  return ticks
}

/** `record`'s row: the one drawn last frame, updated, or a new one when its state or label side changed. */
function drawRow(record: SubCallRecord, span: number, now: number, budget?: DrawBudget): HTMLElement {
  const end = record.end ?? now
  const leftPercent = (record.start / span) * 100
  const widthPercent = Math.max(0.3, ((end - record.start) / span) * 100)
  // A denied call did not fail: a person, a policy or a timeout said no (drawn apart, as its card is).
  const state = callState(record)
  const label = state === 'waiting' ? `${record.name} · awaiting approval` : `${record.name} · ${(end - record.start).toFixed(0)} ms`
  const placement = labelPlacement(leftPercent, widthPercent)
  const shape = `${state}|${placement.where}|${record.end ?? ''}`
  const left = `${leftPercent}%`
  const width = `${widthPercent}%`
  const labelStyle = placement.where === 'inside' ? '' : placement.style
  const drawn = drawnRows.get(record)
  if (drawn?.shape === shape) {
    if (drawn.left !== left) drawn.bar.style.left = drawn.left = left
    if (drawn.width !== width) drawn.bar.style.width = drawn.width = width
    if (drawn.labelStyle !== labelStyle) drawn.text.setAttribute('style', (drawn.labelStyle = labelStyle))
    if (drawn.label !== label) drawn.text.textContent = drawn.label = label
    return drawn.row
  }
  if (budget !== undefined) {
    if (drawn !== undefined && budget.left <= 0) {
      budget.short = true
      return drawn.row
    }
    budget.left--
  }
  const bar = h(
    'div',
    {
      class: `bar ${record.mode}${state === 'done' ? '' : ` ${state}`}`,
      style: `left:${left};width:${width}`,
      title: `${record.subCallId} (${record.mode}) ${record.start.toFixed(1)}–${end.toFixed(1)} ms${state === 'failed' || state === 'denied' ? ` ${state}` : ''}`,
      'data-testid': 'timeline-bar',
      'data-mode': record.mode,
      'data-state': state,
    },
    placement.where === 'inside' ? label : '',
  )
  const beside = placement.where === 'inside' ? undefined : h('span', { class: `bar-label ${placement.where}`, style: placement.style, 'data-testid': 'timeline-label' }, label)
  const row = h('div', { class: 'row' }, h('div', { class: 'who', title: record.subCallId }, record.name), h('div', { class: 'track' }, bar, beside))
  drawnRows.set(record, { row, bar, text: beside ?? bar, shape, left, width, labelStyle, label })
  return row
}

/** `row` (or a new summary row) showing `hidden`: its text and counts replaced in place. */
export function updateHiddenRow(row: HTMLElement | undefined, hidden: HiddenCalls, testId: string): HTMLElement {
  const text = hiddenText(hidden)
  if (row === undefined) return hiddenRow(hidden, testId)
  if (row.textContent === text) return row
  row.textContent = text
  for (const key of ['count', 'done', 'failed', 'denied', 'running'] as const) row.dataset[key] = String(hidden[key])
  return row
}

/** The summary of the calls not drawn: its text, and its counts as `data-*` attributes. */
export function hiddenRow(hidden: HiddenCalls, testId: string): HTMLElement {
  return h(
    'p',
    {
      class: 'more-calls hint small',
      'data-testid': testId,
      'data-count': hidden.count,
      'data-done': hidden.done,
      'data-failed': hidden.failed,
      'data-denied': hidden.denied,
      'data-running': hidden.running,
    },
    hiddenText(hidden),
  )
}
