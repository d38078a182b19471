/**
 * How deep a value nests, asked without recursion: the check every door applies before a value from
 * a program or a client meets code that recurses over it.
 * @module
 */

/** An own property's descriptor, or undefined when even asking throws (a proxy trap). */
function ownDescriptor(value: object, key: string | number): PropertyDescriptor | undefined {
  try {
    return Object.getOwnPropertyDescriptor(value, key)
  } catch {
    // A throwing proxy trap: the property counts as absent.
    return undefined
  }
}

/**
 * Arrays longer than this are walked index by index instead of through `Object.keys`, whose
 * 2.7 M index strings alone filled a sandbox's memory. Their other own properties are not walked:
 * JSON drops them and the lossless snapshot refuses them.
 */
const INDEX_WALK_FROM = 65_536

/** One container on the walk's path: its own keys, its indices (`length`), or (a map, a set) its container children. */
interface Frame {
  readonly value: object
  readonly depth: number
  keys: readonly string[] | undefined
  readonly children: readonly object[] | undefined
  index: number
  /** Indices to walk (a long array walked index by index), else -1. */
  length: number
  /** Holes met so far in a long array: a sparse one is walked by its keys instead. */
  holes: number
}

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null

/** The frame for container `v`: an unreadable one has no children (it adds no depth below it). */
function frameOf(v: object, depth: number): Frame {
  let keys: string[] | undefined
  let children: object[] | undefined
  try {
    if (v instanceof Map) {
      children = []
      for (const [k, item] of Map.prototype.entries.call(v) as Iterable<[unknown, unknown]>) {
        if (isContainer(k)) children.push(k)
        if (isContainer(item)) children.push(item)
      }
    } else if (v instanceof Set) {
      children = []
      for (const item of Set.prototype.values.call(v) as Iterable<unknown>) if (isContainer(item)) children.push(item)
    } else if (Array.isArray(v)) {
      const length = ownDescriptor(v, 'length')?.value
      if (typeof length === 'number' && length > INDEX_WALK_FROM) return { value: v, depth, keys, children, index: 0, length, holes: 0 }
      keys = Object.keys(v)
    } else keys = Object.keys(v)
  } catch {
    // An unreadable container adds no depth; the children it did yield are still walked.
  }
  return { value: v, depth, keys, children, index: 0, length: -1, holes: 0 }
}

/** The next child of an array walked index by index, or `undefined`; past as many holes as elements it goes on by the array's keys. */
function nextElement(frame: Frame): unknown {
  const at = frame.index++
  const descriptor = ownDescriptor(frame.value, at)
  if (descriptor === undefined && ++frame.holes > INDEX_WALK_FROM && frame.holes * 2 > at) {
    try {
      const keys = Object.keys(frame.value)
      let from = 0
      while (from < keys.length && Number(keys[from]) <= at) from++
      frame.keys = keys
      frame.index = from
    } catch {
      frame.keys = []
    }
    frame.length = -1
  }
  return descriptor?.value
}

/**
 * True when `value` nests containers (objects, arrays, maps, sets) more than `limit` levels deep:
 * `1` is 0 levels, `[1]` one, `[[1]]` two. Depth-first: what it holds is the path from the root
 * (one frame a level), never a level's breadth.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (!isContainer(value)) return false
  const deepest = new Map<object, number>()
  const onPath = new Set<object>()
  const path: Frame[] = []
  /** Enters `v` at `depth`; true when that already nests deeper than `limit`. */
  const enter = (v: object, depth: number): boolean => {
    if (onPath.has(v)) return false
    if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer || v instanceof Date || v instanceof RegExp) return false
    // `v` is a container at `depth`, so the value nests at least depth + 1 levels.
    if (depth >= limit) return true
    const before = deepest.get(v)
    if (before !== undefined && before >= depth) return false
    deepest.set(v, depth)
    onPath.add(v)
    path.push(frameOf(v, depth))
    return false
  }
  if (enter(value, 0)) return true
  while (path.length > 0) {
    const frame = path[path.length - 1]!
    if (frame.index < frame.length) {
      const child = nextElement(frame)
      if (isContainer(child) && enter(child, frame.depth + 1)) return true
      continue
    }
    const source = frame.children ?? frame.keys
    if (source === undefined || frame.index >= source.length) {
      path.pop()
      onPath.delete(frame.value)
      continue
    }
    const at = frame.index++
    const child: unknown = frame.children !== undefined ? frame.children[at] : ownDescriptor(frame.value, frame.keys![at]!)?.value
    if (isContainer(child) && enter(child, frame.depth + 1)) return true
  }
  return false
}
