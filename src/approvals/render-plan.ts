/**
 * The one renderer of a plan request (a whole `run_code` program put to a person): bounded
 * and escaped, so a program cannot hide text or forge a prompt line. Never throws.
 *
 * @module
 */
import { splitLines } from '../preflight/line-index.js'
import type { ApprovalPlan } from '../types.js'

/** Programs up to this many characters are shown whole. */
const WHOLE_CODE_CHARS = 3000
/** Characters of a long program shown from its start and from its end. */
const HEAD_CHARS = 1500
const TAIL_CHARS = 1000
/** A program line longer than this is cut (its length is said), unless it holds a planned call. */
const LINE_CHARS = 200
/**
 * A line holding a planned call is shown whole up to this many characters. A longer one
 * cannot be shown, and a plan whose calls cannot all be shown pre-approves nothing.
 */
export const MAX_CALL_LINE_CHARS = 1000
/**
 * Characters of the lines holding planned calls shown beside a long program's start and
 * end. Past it the remaining call lines are not shown, and the plan pre-approves nothing.
 */
export const MAX_CALL_LINES_CHARS = 6000
/** Planned calls (and asking tools) listed before the rest are counted. */
const MAX_LISTED = 40
/** Characters of a description or a reason shown. */
const NOTE_CHARS = 300

// Tabs stay; every other control, bidi, zero-width or separator character is shown by its code.
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g

function escape(text: string): string {
  return text.replace(UNSAFE, (ch) => `\\u{${ch.charCodeAt(0).toString(16)}}`)
}

function cut(text: string, max: number): string {
  return text.length <= max ? escape(text) : `${escape(text.slice(0, max))}… (${text.length} characters)`
}

/** Lines from the start (or, with `fromEnd`, the end) until `budget` characters are used; at least one. */
function take(lines: readonly string[], budget: number, fromEnd: boolean): number {
  let used = 0
  let n = 0
  for (let k = 0; k < lines.length; k++) {
    used += Math.min(lines[fromEnd ? lines.length - 1 - k : k]!.length, LINE_CHARS) + 1
    if (n > 0 && used > budget) break
    n++
  }
  return n
}

/** The numbered program a card shows, and whether every line holding a planned call is in it, whole. */
export interface PlanCodeLayout {
  readonly text: string
  readonly complete: boolean
}

/**
 * The program with line numbers (lines split at every JavaScript line terminator, as the
 * plan numbers them): whole when short, else its start, its end and every line holding a
 * planned call (`callLines`, 1-based), with what is left out between them said. A line
 * holding a call is never cut; `complete` is `false` when one is too long, or when they do
 * not all fit ({@link MAX_CALL_LINE_CHARS}, {@link MAX_CALL_LINES_CHARS}).
 */
export function layoutPlanCode(code: string, callLines: readonly number[] = []): PlanCodeLayout {
  const lines = splitLines(code)
  const width = String(lines.length).length
  const calls = new Set(callLines.filter((n) => Number.isInteger(n) && n >= 1 && n <= lines.length))
  const shown = new Set<number>()
  let complete = true
  if (code.length <= WHOLE_CODE_CHARS) lines.forEach((_line, i) => shown.add(i + 1))
  else {
    const head = take(lines, HEAD_CHARS, false)
    const tail = Math.min(take(lines, TAIL_CHARS, true), lines.length - head)
    for (let n = 1; n <= head; n++) shown.add(n)
    for (let n = lines.length - tail + 1; n <= lines.length; n++) shown.add(n)
    let budget = MAX_CALL_LINES_CHARS
    for (const n of [...calls].sort((a, b) => a - b)) {
      if (shown.has(n)) continue
      budget -= Math.min(lines[n - 1]!.length, MAX_CALL_LINE_CHARS) + 1
      if (budget < 0) complete = false
      else shown.add(n)
    }
  }
  const out: string[] = []
  if (code.length > WHOLE_CODE_CHARS) out.push(`(the program is ${code.length} characters, ${lines.length} lines; its start, its end and the lines with planned calls are shown)`)
  let next = 1
  for (const n of [...shown].sort((a, b) => a - b)) {
    if (n > next) out.push(`… ${n - next} lines (${next}–${n - 1}) not shown …`)
    const line = lines[n - 1]!
    const call = calls.has(n)
    if (call && line.length > MAX_CALL_LINE_CHARS) complete = false
    out.push(`${String(n).padStart(width)} | ${cut(line, call ? MAX_CALL_LINE_CHARS : LINE_CHARS)}`)
    next = n + 1
  }
  if (next <= lines.length) out.push(`… ${lines.length - next + 1} lines (${next}–${lines.length}) not shown …`)
  const missing = [...calls].filter((n) => !shown.has(n) || lines[n - 1]!.length > MAX_CALL_LINE_CHARS).length
  if (missing > 0) out.push(`(${missing} line${missing === 1 ? '' : 's'} with planned calls cannot be shown whole here: nothing is pre-approved)`)
  return { text: out.join('\n'), complete }
}

/** The program with line numbers: whole when short, else head … (what is left out) … tail, and every line in `callLines`. */
export function renderPlanCode(code: string, callLines: readonly number[] = []): string {
  return layoutPlanCode(code, callLines).text
}

/** Whether a card can show every line holding one of `plan`'s calls, whole: a plan that cannot pre-approves nothing. */
export function planCallsShown(plan: Pick<ApprovalPlan, 'code' | 'calls'>): boolean {
  return layoutPlanCode(plan.code, plan.calls.map((c) => c.line)).complete
}

function listed<T>(items: readonly T[], show: (item: T) => string): string[] {
  const out = items.slice(0, MAX_LISTED).map(show)
  if (items.length > MAX_LISTED) out.push(`  … and ${items.length - MAX_LISTED} more`)
  return out
}

/**
 * A plan request as a person reads it: what Allow pre-approves (each asking tool and why
 * it asks), the planned calls with their lines, what still asks, and the program.
 *
 * @example
 * ```ts
 * renderApprovalPlan({ code: 'await tools.write_file({ path: "a", content: "" })', description: 'write a',
 *   calls: [{ name: 'write_file', line: 1, column: 7 }], asking: [{ name: 'write_file', reason: 'changes the workspace' }], dynamic: false })
 * ```
 */
export function renderApprovalPlan(plan: ApprovalPlan): string {
  const out: string[] = []
  const code = layoutPlanCode(plan.code, plan.calls.map((c) => c.line))
  if (plan.description !== '') out.push(`Program: ${cut(plan.description, NOTE_CHARS)}`)
  const grants = !plan.dynamic && code.complete
  if (!code.complete) {
    out.push('Its planned calls cannot all be shown here, so nothing is pre-approved: every call that asks will still ask on its own.')
    out.push('Tools that ask:')
  } else if (plan.dynamic) {
    out.push('It reaches tools by computed names, so nothing is pre-approved: every call that asks will still ask on its own.')
    out.push('Tools that ask:')
  } else out.push('Allow pre-approves, for this run only, the calls to these tools (each still passes the gate and the guards):')
  out.push(...listed(plan.asking, (a) => `  - ${cut(a.name, 80)}${a.reason === undefined || a.reason === '' ? '' : ` (${cut(a.reason, NOTE_CHARS)})`}`))
  out.push('Planned calls:')
  out.push(...listed(plan.calls, (c) => `  - ${cut(c.name, 80)} (line ${c.line})`))
  if (grants) out.push('Any other call that asks will still ask on its own. Deny ends the run before anything runs.')
  out.push('Code:', code.text)
  return out.join('\n')
}
