/**
 * A bounded line diff for the demo's writing tools' previews: what a write or an edit
 * will change, as a unified diff with a header a person reads first ("overwrites
 * README.md: 12 lines → 3 lines", "new file notes/a.md (4 lines)"). Platform-neutral.
 *
 * @module
 */

/** Context lines shown around each change. */
const CONTEXT = 3
/** The largest middle (after the common head and tail) compared line by line: old × new lines. */
const MAX_COMPARE_CELLS = 100_000
/** Lines of diff body produced; the rest are counted (the approval renderer bounds bytes too). */
export const MAX_DIFF_LINES = 400

type Op = { readonly kind: ' ' | '-' | '+'; readonly text: string }

/** Splits file text into lines (a trailing newline does not start a new line). */
export function splitLines(text: string): string[] {
  if (text === '') return []
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  return lines
}

/** The edit script of the middle part by longest common subsequence (both sides non-empty, at most MAX_COMPARE_CELLS apart). */
function middleOps(a: readonly string[], b: readonly string[]): { readonly ops: Op[] } {
  const n = a.length
  const m = b.length
  // lengths[i][j]: the LCS of a[i..] and b[j..], row-major in one array.
  const width = m + 1
  const lengths = new Uint32Array((n + 1) * width)
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[i * width + j] = a[i] === b[j] ? (lengths[(i + 1) * width + j + 1] as number) + 1 : Math.max(lengths[(i + 1) * width + j] as number, lengths[i * width + j + 1] as number)
    }
  }
  const ops: Op[] = []
  let i = 0
  let j = 0
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      ops.push({ kind: ' ', text: a[i++] as string })
      j++
    } else if ((lengths[(i + 1) * width + j] as number) >= (lengths[i * width + j + 1] as number)) ops.push({ kind: '-', text: a[i++] as string })
    else ops.push({ kind: '+', text: b[j++] as string })
  }
  while (i < n) ops.push({ kind: '-', text: a[i++] as string })
  while (j < m) ops.push({ kind: '+', text: b[j++] as string })
  return { ops }
}

/** What {@link lineDiff} answers. */
export interface LineDiff {
  readonly removed: number
  readonly added: number
  /** The unified diff's hunks (`@@ … @@` and their lines), at most {@link MAX_DIFF_LINES} lines, the rest counted on a last line. */
  readonly hunks: readonly string[]
  /** False when the changed part was too large to compare line by line (shown as removed, then added). */
  readonly minimal: boolean
}

/** Collects diff lines up to {@link MAX_DIFF_LINES}; the rest are only counted (no string is built for them). */
class Out {
  readonly lines: string[] = []
  hidden = 0
  push(kind: string, text: string): void {
    if (this.lines.length < MAX_DIFF_LINES) this.lines.push(`${kind}${text}`)
    else this.hidden++
  }
  done(): string[] {
    return this.hidden === 0 ? this.lines : [...this.lines, `… ${this.hidden} more lines of the diff not shown`]
  }
}

/** `@@ -a,b +c,d @@`; an empty side starts at the line before (`@@ -0,0 +1,3 @@` for a new file). */
function hunkHeader(oldStart: number, oldCount: number, newStart: number, newCount: number): string {
  return `@@ -${oldCount === 0 ? oldStart - 1 : oldStart},${oldCount} +${newCount === 0 ? newStart - 1 : newStart},${newCount} @@`
}

/** Groups the ops (which start at line `first` of both texts) into unified-diff hunks with {@link CONTEXT} lines of context. */
function hunksOf(ops: readonly Op[], first: number, out: Out): void {
  let oldLine = first
  let newLine = first
  let index = 0
  while (index < ops.length) {
    if ((ops[index] as Op).kind === ' ') {
      oldLine++
      newLine++
      index++
      continue
    }
    // A hunk: from CONTEXT lines before this change to CONTEXT lines after the last change
    // that is at most 2 × CONTEXT unchanged lines from the next.
    const start = Math.max(0, index - CONTEXT)
    let end = index
    for (let k = index, quiet = 0; k < ops.length; k++) {
      if ((ops[k] as Op).kind === ' ') quiet++
      else {
        quiet = 0
        end = k
      }
      if (quiet > 2 * CONTEXT) break
    }
    const stop = Math.min(ops.length, end + 1 + CONTEXT)
    const back = index - start
    let oldCount = 0
    let newCount = 0
    for (let k = start; k < stop; k++) {
      const kind = (ops[k] as Op).kind
      if (kind !== '+') oldCount++
      if (kind !== '-') newCount++
    }
    out.push('', hunkHeader(oldLine - back, oldCount, newLine - back, newCount))
    for (let k = start; k < stop; k++) out.push((ops[k] as Op).kind, (ops[k] as Op).text)
    oldLine += oldCount - back
    newLine += newCount - back
    index = stop
  }
}

/** The line diff of `before` → `after`: counts and bounded unified hunks. Work is linear in the texts, plus a bounded table. */
export function lineDiff(before: string, after: string): LineDiff {
  const a = splitLines(before)
  const b = splitLines(after)
  let head = 0
  while (head < a.length && head < b.length && a[head] === b[head]) head++
  let tail = 0
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++
  const oldMiddle = a.slice(head, a.length - tail)
  const newMiddle = b.slice(head, b.length - tail)
  const out = new Out()
  if (oldMiddle.length === 0 && newMiddle.length === 0) return { removed: 0, added: 0, hunks: [], minimal: true }
  // Only the context lines of the common head and tail are ever shown.
  const contextBefore = a.slice(Math.max(0, head - CONTEXT), head)
  const contextAfter = a.slice(a.length - tail, a.length - tail + CONTEXT)
  const compare = oldMiddle.length > 0 && newMiddle.length > 0 && oldMiddle.length * newMiddle.length <= MAX_COMPARE_CELLS
  if (!compare) {
    // One block: removed, then added (a new file, a deleted text, or too large to compare).
    const first = head - contextBefore.length + 1
    out.push('', hunkHeader(first, contextBefore.length + oldMiddle.length + contextAfter.length, first, contextBefore.length + newMiddle.length + contextAfter.length))
    for (const text of contextBefore) out.push(' ', text)
    for (const text of oldMiddle) out.push('-', text)
    for (const text of newMiddle) out.push('+', text)
    for (const text of contextAfter) out.push(' ', text)
    return { removed: oldMiddle.length, added: newMiddle.length, hunks: out.done(), minimal: oldMiddle.length === 0 || newMiddle.length === 0 }
  }
  const middle = middleOps(oldMiddle, newMiddle)
  const ops: Op[] = [...contextBefore.map((text): Op => ({ kind: ' ', text })), ...middle.ops, ...contextAfter.map((text): Op => ({ kind: ' ', text }))]
  hunksOf(ops, head - contextBefore.length + 1, out)
  let removed = 0
  let added = 0
  for (const op of middle.ops) {
    if (op.kind === '-') removed++
    else if (op.kind === '+') added++
  }
  return { removed, added, hunks: out.done(), minimal: true }
}

const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`

/**
 * The preview of writing `next` to `path` whose current text is `current` (`undefined`:
 * no such file): "new file <path> (N lines)" with its lines, or "overwrites <path>: N
 * lines → M lines (R removed, A added)" with the unified diff against the current text.
 */
export function writePreview(path: string, current: string | undefined, next: string): string {
  if (current === undefined) {
    const diff = lineDiff('', next)
    return [`new file ${path} (${plural(splitLines(next).length, 'line')})`, '--- /dev/null', `+++ b/${path}`, ...diff.hunks].join('\n')
  }
  return changePreview(`overwrites ${path}`, path, current, next)
}

/** "<verb>: N lines → M lines (R removed, A added)" and the unified diff of `before` → `after`. */
export function changePreview(verb: string, path: string, before: string, after: string): string {
  const diff = lineDiff(before, after)
  const counts = `${plural(splitLines(before).length, 'line')} → ${plural(splitLines(after).length, 'line')}`
  if (diff.removed === 0 && diff.added === 0) {
    return `${verb}: ${counts}, ${before === after ? 'no change (the same content)' : 'only the final newline differs'}`
  }
  const header = `${verb}: ${counts} (${diff.removed} removed, ${diff.added} added)${diff.minimal ? '' : ' — too large to compare line by line: every changed line is listed as removed, then added'}`
  return [header, `--- a/${path}`, `+++ b/${path}`, ...diff.hunks].join('\n')
}
