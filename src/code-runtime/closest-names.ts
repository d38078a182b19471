/**
 * The names closest to a misspelt one, for "did you mean …?" in the sandbox's error for an unknown
 * binding (`tools.list_file()` → `tools.list_files`).
 * @module
 */

/** Characters of each name that take part in the comparison (tool names are far shorter). */
export const MAX_COMPARED_CHARS = 64
/** Suggestions returned at most. */
export const MAX_SUGGESTIONS = 3

/** Lower case, separators and punctuation dropped: `readFile`, `read-file` and `READ_FILE` all read `readfile`. */
function normalized(name: string): string {
  return name.slice(0, MAX_COMPARED_CHARS).toLowerCase().replace(/[^a-z0-9]/g, '')
}

/**
 * The optimal-string-alignment distance (insertions, deletions, substitutions and
 * adjacent transpositions, each costing 1) between `a` and `b`, or `limit + 1` as soon
 * as it is certain to exceed `limit`.
 */
export function boundedDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  // Stryker disable next-line ArrayDeclaration: the length is a hint only
  let before = new Array<number>(b.length + 1)
  // Stryker disable next-line ArrayDeclaration: the length is a hint only
  let previous = new Array<number>(b.length + 1)
  // Stryker disable next-line ArrayDeclaration: the length is a hint only
  let current = new Array<number>(b.length + 1)
  for (let j = 0; j <= b.length; j++) previous[j] = j
  for (let i = 1; i <= a.length; i++) {
    current[0] = i
    let rowMin = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1)
      current[j] = d
      if (d < rowMin) rowMin = d
    }
    if (rowMin > limit) return limit + 1
    ;[before, previous, current] = [previous, current, before]
  }
  return previous[b.length]!
}

/**
 * Up to {@link MAX_SUGGESTIONS} of `names` closest to `wanted`, best first (ties in the
 * namespace's order): the same name written another way (`readFile` for `read_file`)
 * first, then by edit distance, within about a third of the name's length (at least 1,
 * at most 4 edits). Empty when nothing is close.
 */
export function closestNames(wanted: string, names: readonly string[]): string[] {
  const key = normalized(wanted)
  if (key === '') return []
  const limit = Math.max(1, Math.min(4, Math.floor(key.length / 3)))
  const scored: Array<{ readonly name: string; readonly distance: number; readonly order: number }> = []
  for (let order = 0; order < names.length; order++) {
    const name = names[order]!
    const distance = boundedDistance(key, normalized(name), limit)
    if (distance <= limit) scored.push({ name, distance, order })
  }
  scored.sort((x, y) => x.distance - y.distance || x.order - y.order)
  return scored.slice(0, MAX_SUGGESTIONS).map((s) => s.name)
}
