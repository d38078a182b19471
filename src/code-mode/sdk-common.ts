/**
 * What both SDK renderers share: the tool input shape, the deterministic order and filtering of a
 * tool set, and line splitting.
 * @module
 */
import type { JsonSchemaNode } from '../schema/json-schema-node.js'
import { isSchemaRecord } from '../schema/subset.js'

/** One tool as the SDK renderers see it: its name, description and both schemas. */
export interface SdkToolInput {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchemaNode
  readonly output: JsonSchemaNode
}

/** Compares strings by Unicode code point (not UTF-16 code unit), for an order that is the same on every platform. */
export function compareCodePoints(a: string, b: string): number {
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) as number
    const cb = b.codePointAt(j) as number
    if (ca !== cb) return ca < cb ? -1 : 1
    i += ca > 0xffff ? 2 : 1
    j += cb > 0xffff ? 2 : 1
  }
  const restA = a.length - i
  const restB = b.length - j
  return restA === restB ? 0 : restA < restB ? -1 : 1
}

/**
 * Sorts tools by name (code point order) and drops malformed entries and repeated names
 * (the first occurrence wins), so rendering is deterministic and total.
 */
export function normalizeSdkTools(tools: readonly SdkToolInput[]): SdkToolInput[] {
  const byName = new Map<string, SdkToolInput>()
  let list: readonly unknown[]
  try {
    list = Array.isArray(tools) ? Array.from(tools as readonly unknown[]) : []
  } catch {
    // A hostile array (a Proxy whose traps throw) renders as an empty tool set: rendering is total.
    list = []
  }
  for (const entry of list) {
    try {
      if (!isSchemaRecord(entry)) continue
      const name = entry['name']
      if (typeof name !== 'string' || byName.has(name)) continue
      const description = entry['description']
      byName.set(name, {
        name,
        description: typeof description === 'string' ? description : '',
        parameters: entry['parameters'] as SdkToolInput['parameters'],
        output: entry['output'] as SdkToolInput['output'],
      })
    } catch {
      // A hostile entry is left out rather than failing the whole assembly.
    }
  }
  return [...byName.values()].sort((a, b) => compareCodePoints(a.name, b.name))
}

function splitLines(text: string): string[] {
  return text.split(/\r\n|[\r\n\u2028\u2029]/)
}

/** The lines of a description as a comment shows them: trailing spaces and leading/trailing blank lines dropped. */
export function commentLines(text: string): string[] {
  const lines = splitLines(text).map((line) => line.trimEnd())
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  while (lines.length > 0 && lines[0] === '') lines.shift()
  return lines
}
