/**
 * How deep a value nests, asked without recursion: the check every door applies before a value from
 * a program or a client meets code that recurses over it.
 * @module
 */

/** An own property's descriptor, or undefined when even asking throws (a proxy trap). */
function ownDescriptor(value: object, key: string): PropertyDescriptor | undefined {
  try {
    return Object.getOwnPropertyDescriptor(value, key)
  } catch {
    // A throwing proxy trap: the property counts as absent.
    return undefined
  }
}

/**
 * True when `value` nests containers (objects, arrays, maps, sets) more than `limit` levels deep:
 * `1` is 0 levels, `[1]` one, `[[1]]` two.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null
  if (!isContainer(value)) return false
  const deepest = new Map<object, number>()
  const onPath = new Set<object>()
  // A `leave` entry is popped after the container's children: the container is then off the path.
  const stack: Array<{ readonly value: object; readonly depth: number } | { readonly leave: object }> = [{ value, depth: 0 }]
  while (stack.length > 0) {
    const entry = stack.pop()!
    if ('leave' in entry) {
      onPath.delete(entry.leave)
      continue
    }
    const { value: v, depth } = entry
    if (onPath.has(v)) continue
    if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer || v instanceof Date || v instanceof RegExp) continue
    // `v` is a container at `depth`, so the value nests at least depth + 1 levels.
    if (depth >= limit) return true
    const before = deepest.get(v)
    if (before !== undefined && before >= depth) continue
    deepest.set(v, depth)
    onPath.add(v)
    stack.push({ leave: v })
    const below = depth + 1
    try {
      if (v instanceof Map) {
        for (const [k, item] of Map.prototype.entries.call(v) as Iterable<[unknown, unknown]>) {
          if (isContainer(k)) stack.push({ value: k, depth: below })
          if (isContainer(item)) stack.push({ value: item, depth: below })
        }
      } else if (v instanceof Set) {
        for (const item of Set.prototype.values.call(v) as Iterable<unknown>) if (isContainer(item)) stack.push({ value: item, depth: below })
      } else {
        for (const key of Object.keys(v)) {
          const desc = ownDescriptor(v, key)
          if (desc !== undefined && isContainer(desc.value)) stack.push({ value: desc.value, depth: below })
        }
      }
    } catch {
      // An unreadable container adds no depth; the values it did yield are still walked.
    }
  }
  return false
}
