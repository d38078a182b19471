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
import { isDenial, type SubCallRecord } from './cards.js'
import { h, replaceChildren } from './dom.js'

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

/** Draws `records` into `target`; `now` (ms since run start) extends running bars. */
export function renderTimeline(target: HTMLElement, records: readonly SubCallRecord[], now: number): void {
  if (records.length === 0) {
    replaceChildren(target, h('p', { class: 'hint small' }, 'No sub-calls: the program called no tools.'))
    return
  }
  const span = Math.max(1, now, ...records.map((r) => r.end ?? now))
  const step = niceStep(span)
  const ticks: HTMLElement[] = []
  for (let t = 0; t <= span + 1e-9; t += step) {
    const at = (t / span) * 100
    // A label near the right end ends at its tick instead of centring on it: never cut by the box's edge.
    ticks.push(h('span', { style: `left:${at}%${at > 90 ? ';transform:translateX(-100%)' : ''}` }, `${Number(t.toFixed(3))} ms`))
  }
  const rows = records.map((record) => {
    const end = record.end ?? now
    const left = (record.start / span) * 100
    const width = Math.max(0.3, ((end - record.start) / span) * 100)
    const waiting = record.end === undefined && record.approval?.state === 'pending'
    // A denied call did not fail: a person, a policy or a timeout said no (drawn apart, as its card is).
    const state = waiting ? 'waiting' : record.end === undefined ? 'running' : record.isError === true ? (isDenial(record) ? 'denied' : 'failed') : 'done'
    const label = waiting ? `${record.name} · awaiting approval` : `${record.name} · ${(end - record.start).toFixed(0)} ms`
    const placement = labelPlacement(left, width)
    return h(
      'div',
      { class: 'row' },
      h('div', { class: 'who', title: record.subCallId }, record.name),
      h(
        'div',
        { class: 'track' },
        h(
          'div',
          {
            class: `bar ${record.mode}${state === 'done' ? '' : ` ${state}`}`,
            style: `left:${left}%;width:${width}%`,
            title: `${record.subCallId} (${record.mode}) ${record.start.toFixed(1)}–${end.toFixed(1)} ms${state === 'failed' || state === 'denied' ? ` ${state}` : ''}`,
            'data-testid': 'timeline-bar',
            'data-mode': record.mode,
            'data-state': state,
          },
          placement.where === 'inside' ? label : '',
        ),
        placement.where === 'inside' ? [] : h('span', { class: `bar-label ${placement.where}`, style: placement.style, 'data-testid': 'timeline-label' }, label),
      ),
    )
  })
  replaceChildren(target, h('div', { class: 'axis' }, ticks), rows)
}
