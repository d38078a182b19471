/**
 * How a `run_code` result reaches the model: the program's printed lines, then its completion value
 * (strings raw, every other JSON root pretty-printed with total indentation capped, `null`
 * explicit), or a fixed marker when both are empty.
 * @module
 */
import type { JsonValue } from '../json/json-value.js'
import { utf8Length, utf8Prefix } from '../util/utf8.js'

/** The text the model sees when a run printed nothing and returned `undefined`. */
export const RUN_CODE_NO_OUTPUT = '(run_code completed with no output)'

/** The canonical value of a successful `run_code` call. */
export interface RunCodeOutput {
  /** Every captured line, in the order the program wrote them. */
  readonly logs: readonly string[]
  /** The completion value; absent when the program returned `undefined`. */
  readonly result?: JsonValue
  /** `preflight: 'warn'`: the type-check's mistakes that matter, as the model reads them (absent when none, or when the check had not finished). */
  readonly preflight?: string
}

/** Options for {@link prettyJson}. */
export interface PrettyJsonOptions {
  /** The largest total indentation, in characters. */
  readonly maxIndent: number
  /** Spaces per level. Default 2. */
  readonly indent?: number
}

interface Frame {
  readonly close: string
  readonly items: readonly unknown[]
  readonly keys: readonly string[] | undefined
  readonly depth: number
  readonly compact: boolean
  index: number
}

/**
 * Serializes a JSON value like `JSON.stringify(value, null, indent)` except that nesting is printed
 * with an explicit stack (any depth) and total indentation never exceeds `maxIndent`: deeper
 * subtrees stay compact on one line.
 * @example
 * ```ts
 * prettyJson({ a: [1, 2] }, { maxIndent: 10 }) // '{\n  "a": [\n    1,\n    2\n  ]\n}'
 * prettyJson({ a: [1, 2] }, { maxIndent: 0 })  // '{"a":[1,2]}'
 * ```
 */
export function prettyJson(value: unknown, options: PrettyJsonOptions): string {
  const step = Math.max(0, Math.floor(options.indent ?? 2))
  const maxIndent = Math.max(0, Math.floor(options.maxIndent))
  const out: string[] = []
  const stack: Frame[] = []
  // A container at `depth` expands only if its members' indentation stays within the cap.
  const expands = (depth: number): boolean => step > 0 && step * (depth + 1) <= maxIndent

  const open = (item: unknown, depth: number, outerCompact: boolean): void => {
    if (Array.isArray(item)) {
      if (item.length === 0) {
        out.push('[]')
        return
      }
      out.push('[')
      stack.push({ close: ']', items: item, keys: undefined, depth, compact: outerCompact || !expands(depth), index: 0 })
      return
    }
    if (item !== null && typeof item === 'object') {
      const keys = Object.keys(item)
      if (keys.length === 0) {
        out.push('{}')
        return
      }
      const record = item as Record<string, unknown>
      out.push('{')
      stack.push({
        close: '}',
        items: keys.map((k) => record[k]),
        keys,
        depth,
        compact: outerCompact || !expands(depth),
        index: 0,
      })
      return
    }
    out.push(scalar(item))
  }

  open(value, 0, false)
  for (;;) {
    const frame = stack[stack.length - 1]
    if (frame === undefined) break
    if (frame.index < frame.items.length) {
      const i = frame.index++
      if (i > 0) out.push(',')
      if (!frame.compact) out.push('\n', ' '.repeat(step * (frame.depth + 1)))
      if (frame.keys !== undefined) out.push(JSON.stringify(frame.keys[i]), frame.compact ? ':' : ': ')
      open(frame.items[i], frame.depth + 1, frame.compact)
      continue
    }
    stack.pop()
    if (!frame.compact) out.push('\n', ' '.repeat(step * frame.depth))
    out.push(frame.close)
  }
  return out.join('')
}

function scalar(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null'
    case 'boolean':
      return value ? 'true' : 'false'
    default:
      return 'null'
  }
}

/**
 * Renders a `run_code` result as the model reads it: the logged lines joined with `\n`, then the
 * completion value — a string raw, any other JSON root through {@link prettyJson} with indentation
 * capped at ten characters, `null` explicit.
 * @example
 * ```ts
 * renderRunCodeOutput({ logs: ['hi'], result: { n: 1 } }) // 'hi\n{\n  "n": 1\n}'
 * renderRunCodeOutput({ logs: [] })                      // '(run_code completed with no output)'
 * ```
 */
export function renderRunCodeOutput(value: RunCodeOutput): string {
  const logs = Array.isArray(value.logs) ? value.logs.join('\n') : ''
  const result =
    value.result === undefined
      ? ''
      : typeof value.result === 'string'
        ? value.result
        : prettyJson(value.result, { maxIndent: 10 })
  const body = logs === '' && result === '' ? RUN_CODE_NO_OUTPUT : logs === '' ? result : result === '' ? logs : `${logs}\n${result}`
  return typeof value.preflight === 'string' ? `${body}\n\n${value.preflight}` : body
}

/** The UTF-8 byte length of `text` without encoding it (one implementation, shared with the code runtimes' caps). */
export { utf8Length as utf8ByteLength } from '../util/utf8.js'

/**
 * The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes` (never splits a
 * surrogate pair; a lone surrogate counts as the 3 bytes of U+FFFD), with `…` appended
 * when anything was cut; `text` itself when it fits.
 */
export function truncateToBytes(text: string, maxBytes: number): string {
  return utf8Length(text) <= maxBytes ? text : `${utf8Prefix(text, maxBytes)}…`
}
