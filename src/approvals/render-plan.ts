/**
 * The one renderer of a plan request (a whole `run_code` program put to a person before
 * it runs): the broker's `summary`, the MCP elicitation text and the playground's plan
 * card show what this returns. The program is model-written: it is shown bounded (a long
 * program as its size, head and tail, with line numbers so the planned calls can be
 * found) and escaped (control, bidi and zero-width characters shown as `\u{…}`), so it
 * cannot hide text from the reader or forge a line of the prompt. Never throws.
 *
 * @module
 */
import type { ApprovalPlan } from '../types.js'

/** Programs up to this many characters are shown whole. */
const WHOLE_CODE_CHARS = 3000
/** Characters of a long program shown from its start and from its end. */
const HEAD_CHARS = 1500
const TAIL_CHARS = 1000
/** A program line longer than this is cut (its length is said). */
const LINE_CHARS = 200
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

function numbered(lines: readonly string[], first: number, width: number): string[] {
  return lines.map((line, i) => `${String(first + i).padStart(width)} | ${cut(line, LINE_CHARS)}`)
}

/** Lines from the start (or, with `fromEnd`, the end) until `budget` characters are used; at least one. */
function take(lines: readonly string[], budget: number, fromEnd: boolean): number {
  let used = 0
  let n = 0
  for (const line of fromEnd ? [...lines].reverse() : lines) {
    used += Math.min(line.length, LINE_CHARS) + 1
    if (n > 0 && used > budget) break
    n++
  }
  return n
}

/** The program with line numbers: whole when short, else head … (what is left out) … tail. */
export function renderPlanCode(code: string): string {
  const lines = code.split(/\r\n|\r|\n/)
  const width = String(lines.length).length
  if (code.length <= WHOLE_CODE_CHARS) return numbered(lines, 1, width).join('\n')
  const head = take(lines, HEAD_CHARS, false)
  const tail = Math.min(take(lines, TAIL_CHARS, true), lines.length - head)
  const out = [`(the program is ${code.length} characters, ${lines.length} lines; its start and end are shown)`, ...numbered(lines.slice(0, head), 1, width)]
  const hidden = lines.length - head - tail
  if (hidden > 0) out.push(`… ${hidden} lines (${head + 1}–${head + hidden}) not shown …`)
  if (tail > 0) out.push(...numbered(lines.slice(lines.length - tail), lines.length - tail + 1, width))
  return out.join('\n')
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
  if (plan.description !== '') out.push(`Program: ${cut(plan.description, NOTE_CHARS)}`)
  if (plan.dynamic) {
    out.push('It reaches tools by computed names, so nothing is pre-approved: every call that asks will still ask on its own.')
    out.push('Tools that ask:')
  } else out.push('Allow pre-approves, for this run only, the calls to these tools (each still passes the gate and the guards):')
  out.push(...listed(plan.asking, (a) => `  - ${cut(a.name, 80)}${a.reason === undefined || a.reason === '' ? '' : ` (${cut(a.reason, NOTE_CHARS)})`}`))
  out.push('Planned calls:')
  out.push(...listed(plan.calls, (c) => `  - ${cut(c.name, 80)} (line ${c.line})`))
  if (!plan.dynamic) out.push('Any other call that asks will still ask on its own. Deny ends the run before anything runs.')
  out.push('Code:', renderPlanCode(plan.code))
  return out.join('\n')
}
