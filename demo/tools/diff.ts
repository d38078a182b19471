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
const MAX_COMPARE_CELLS = 250_000
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

/** The edit script of the middle part by longest common subsequence, or remove-all/add-all when too large. */
function middleOps(a: readonly string[], b: readonly string[]): { readonly ops: Op[]; readonly minimal: boolean } {
  const n = a.length
  const m = b.length
  if (n === 0 || m === 0 || n * m > MAX_COMPARE_CELLS) {
    return { ops: [...a.map((text): Op => ({ kind: '-', text })), ...b.map((text): Op => ({ kind: '+', text }))], minimal: n === 0 || m === 0 }
  }
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
  return { ops, minimal: true }
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

/** Groups the ops into unified-diff hunks with {@link CONTEXT} lines of context. */
function hunksOf(ops: readonly Op[]): string[] {
  const out: string[] = []
  let oldLine = 1
  let newLine = 1
  let index = 0
  let hidden = 0
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
    const slice = ops.slice(start, stop)
    const oldCount = slice.filter((op) => op.kind !== '+').length
    const newCount = slice.filter((op) => op.kind !== '-').length
    // An empty side starts at the line before (`@@ -0,0 +1,3 @@` for a new file).
    const header = `@@ -${oldLine - back - (oldCount === 0 ? 1 : 0)},${oldCount} +${newLine - back - (newCount === 0 ? 1 : 0)},${newCount} @@`
    for (const line of [header, ...slice.map((op) => `${op.kind}${op.text}`)]) {
      if (out.length < MAX_DIFF_LINES) out.push(line)
      else hidden++
    }
    for (let k = index; k < stop; k++) {
      const kind = (ops[k] as Op).kind
      if (kind !== '+') oldLine++
      if (kind !== '-') newLine++
    }
    index = stop
  }
  if (hidden > 0) out.push(`… ${hidden} more lines of the diff not shown`)
  return out
}

/** The line diff of `before` → `after`: counts and bounded unified hunks. */
export function lineDiff(before: string, after: string): LineDiff {
  const a = splitLines(before)
  const b = splitLines(after)
  let head = 0
  while (head < a.length && head < b.length && a[head] === b[head]) head++
  let tail = 0
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++
  const middle = middleOps(a.slice(head, a.length - tail), b.slice(head, b.length - tail))
  const ops: Op[] = [
    ...a.slice(0, head).map((text): Op => ({ kind: ' ', text })),
    ...middle.ops,
    ...a.slice(a.length - tail).map((text): Op => ({ kind: ' ', text })),
  ]
  return {
    removed: ops.filter((op) => op.kind === '-').length,
    added: ops.filter((op) => op.kind === '+').length,
    hunks: hunksOf(ops),
    minimal: middle.minimal,
  }
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
