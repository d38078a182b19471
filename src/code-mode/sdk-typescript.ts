/**
 * The TypeScript flavour of the Code Mode SDK: `jsonSchemaToTs` (one schema → one type expression)
 * and the SDK block a model reads (`JsonValue`, `ToolArgsMap`, `ToolOutputMap`, `ToolName`,
 * `ToolCallError`, `declare const tools`).
 * @module
 */
import type { JsonPrimitive } from '../json/json-value.js'
import { classifySchemaNode, hasOnlyOptionalProperties } from '../schema/subset.js'
import { commentLines, normalizeSdkTools, type SdkToolInput } from './sdk-common.js'
import { TYPESCRIPT_SDK_INSTRUCTIONS } from './sdk-instructions.js'

// ───────────────────────── TypeScript rendering ─────────────────────────

/** Options for {@link jsonSchemaToTs}. */
export interface JsonSchemaToTsOptions {
  /**
   * Indentation already in front of the line the type starts on; continuation lines of
   * multi-line object types are prefixed with it. Default `''`.
   */
  readonly baseIndent?: string
  /** Maximum number of schema nodes visited; nodes beyond it render as `unknown`. Default 1,000,000. */
  readonly maxNodes?: number
}

const INDENT = '  '
/** Object types nested deeper than this render on one line, so text stays linear in depth. */
const MAX_PRETTY_DEPTH = 16
const DEFAULT_MAX_NODES = 1_000_000
const TS_IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** A property key as TypeScript source: bare when it is an identifier, quoted otherwise. */
function tsKey(name: string): string {
  return TS_IDENTIFIER.test(name) ? name : JSON.stringify(name)
}

/** A JSDoc block for a description, or `[]`. */
function jsDoc(description: string | undefined, deprecated: boolean, indent: string): string[] {
  const lines = description === undefined ? [] : commentLines(description.replaceAll('*/', '*\\/'))
  if (deprecated) lines.push('@deprecated')
  if (lines.length === 0) return []
  if (lines.length === 1) return [`${indent}/** ${lines[0]} */`]
  return [`${indent}/**`, ...lines.map((l) => (l === '' ? `${indent} *` : `${indent} * ${l}`)), `${indent} */`]
}

type TsTask =
  | { readonly t: 'node'; readonly node: unknown; readonly level: number }
  | { readonly t: 'text'; readonly text: string }
  | { readonly t: 'exit'; readonly owner: object }

/** Whether a node renders as a top-level union, so an array of it needs parentheses. */
function rendersAsUnion(node: unknown): boolean {
  const shape = classifySchemaNode(node)
  return (shape.kind === 'literals' && shape.values.length > 1) || shape.kind === 'oneOf'
}

function tsLiteral(value: JsonPrimitive): string {
  return JSON.stringify(value)
}

/**
 * Renders a JSON Schema node as a TypeScript type expression. Total and stack-safe: it never
 * throws, whatever `schema` is (a 100,000-level schema renders without `RangeError`, in time and
 * text linear in its size; a cyclic object graph renders its back edges as `unknown`).
 * @example
 * ```ts
 * jsonSchemaToTs({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false })
 * // '{\n  path: string;\n}'
 * ```
 */
export function jsonSchemaToTs(schema: unknown, options?: JsonSchemaToTsOptions): string {
  try {
    return renderTs(schema, options)
  } catch {
    // Only reachable on resource exhaustion (e.g. a string too long to build); still total.
    return 'unknown'
  }
}

function renderTs(schema: unknown, options: JsonSchemaToTsOptions | undefined): string {
  const base = typeof options?.baseIndent === 'string' ? options.baseIndent : ''
  const rawMax = options?.maxNodes
  const maxNodes = typeof rawMax === 'number' && rawMax >= 1 ? rawMax : DEFAULT_MAX_NODES
  let visited = 0
  const active = new Set<object>()
  // Fragments are emitted in order and joined once: composing child strings into parent
  // strings would copy deep schemas quadratically.
  const out: string[] = []
  const tasks: TsTask[] = [{ t: 'node', node: schema, level: 0 }]
  // Tasks run LIFO, so a sequence is pushed back to front.
  const schedule = (sequence: TsTask[]): void => {
    for (let i = sequence.length - 1; i >= 0; i--) tasks.push(sequence[i] as TsTask)
  }

  while (tasks.length > 0) {
    const task = tasks.pop() as TsTask
    if (task.t === 'text') {
      out.push(task.text)
      continue
    }
    if (task.t === 'exit') {
      active.delete(task.owner)
      continue
    }
    const { node, level } = task
    visited++
    if (visited > maxNodes || (typeof node === 'object' && node !== null && active.has(node))) {
      out.push('unknown')
      continue
    }
    const shape = classifySchemaNode(node)
    switch (shape.kind) {
      case 'unsupported':
        out.push('unknown')
        break
      case 'any':
        out.push('JsonValue')
        break
      case 'never':
        out.push('never')
        break
      case 'primitive':
        out.push(shape.type === 'integer' ? 'number' : shape.type)
        break
      case 'literals':
        out.push(shape.values.map(tsLiteral).join(' | '))
        break
      case 'array': {
        if (!shape.hasItems) {
          out.push('JsonValue[]')
          break
        }
        const owner = node as object
        active.add(owner)
        const paren = rendersAsUnion(shape.items)
        if (paren) out.push('(')
        schedule([{ t: 'node', node: shape.items, level }, { t: 'text', text: paren ? ')[]' : '[]' }, { t: 'exit', owner }])
        break
      }
      case 'oneOf': {
        const owner = node as object
        active.add(owner)
        const sequence: TsTask[] = []
        shape.branches.forEach((branch, i) => {
          if (i > 0) sequence.push({ t: 'text', text: ' | ' })
          sequence.push({ t: 'node', node: branch, level })
        })
        sequence.push({ t: 'exit', owner })
        schedule(sequence)
        break
      }
      case 'object': {
        const { properties } = shape
        // Declared properties are the keys the tool reads: an undeclared key is a typo the
        // type-check reports, unless the schema opens the object on purpose (docs/code-mode.md).
        const open = properties.length === 0 ? shape.open : shape.explicitlyOpen
        if (properties.length === 0) {
          out.push(open ? '{ [key: string]: JsonValue }' : '{ [key: string]: never }')
          break
        }
        const owner = node as object
        active.add(owner)
        // Declared property types need not be JSON (optional ones include undefined, degraded ones
        // are unknown), so an open object's index signature must be `unknown` to compile.
        const index = '[key: string]: unknown'
        const sequence: TsTask[] = []
        if (level >= MAX_PRETTY_DEPTH) {
          // Deep levels go on one line, so text stays linear in depth.
          out.push('{ ')
          properties.forEach((p, i) => {
            sequence.push({ t: 'text', text: `${i > 0 ? '; ' : ''}${tsKey(p.name)}${p.required ? '' : '?'}: ` })
            sequence.push({ t: 'node', node: p.schema, level: level + 1 })
          })
          sequence.push({ t: 'text', text: open ? `; ${index} }` : ' }' })
        } else {
          const inner = base + INDENT.repeat(level + 1)
          out.push('{\n')
          for (const p of properties) {
            const doc = jsDoc(p.description, p.deprecated, inner)
            const head = doc.length > 0 ? `${doc.join('\n')}\n` : ''
            sequence.push({ t: 'text', text: `${head}${inner}${tsKey(p.name)}${p.required ? '' : '?'}: ` })
            sequence.push({ t: 'node', node: p.schema, level: level + 1 })
            sequence.push({ t: 'text', text: ';\n' })
          }
          sequence.push({ t: 'text', text: `${open ? `${inner}${index};\n` : ''}${base}${INDENT.repeat(level)}}` })
        }
        sequence.push({ t: 'exit', owner })
        schedule(sequence)
        break
      }
    }
  }
  return out.join('')
}

// ───────────────────────── the SDK block ─────────────────────────

const JSON_VALUE_DECLARATION =
  'type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };'

/**
 * Renders the TypeScript SDK block (declarations only) for `tools`, already in any
 * order: tools are sorted by code point and rendered deterministically.
 */
export function renderTypeScriptSdkBlock(tools: readonly SdkToolInput[]): string {
  const sorted = normalizeSdkTools(tools)
  const out: string[] = [JSON_VALUE_DECLARATION, '']

  out.push('interface ToolArgsMap {')
  for (const tool of sorted) out.push(`  ${JSON.stringify(tool.name)}: ${jsonSchemaToTs(tool.parameters, { baseIndent: '  ' })};`)
  out.push('}', '')

  out.push('interface ToolOutputMap {')
  for (const tool of sorted) out.push(`  ${JSON.stringify(tool.name)}: ${jsonSchemaToTs(tool.output, { baseIndent: '  ' })};`)
  out.push('}', '')

  out.push('type ToolName = keyof ToolArgsMap;', '')
  out.push('/** The error a failed tool call rejects with. */')
  out.push('declare class ToolCallError extends Error {')
  out.push('  /** The tool whose call failed. */')
  out.push('  readonly toolName: ToolName | string;')
  out.push('  /** Why: DENIED_BY_GATE, INVALID_ARGS, TOOL_FAILED, … */')
  out.push('  readonly code: string;')
  out.push('}', '')

  out.push('declare const tools: {')
  for (const tool of sorted) {
    const key = JSON.stringify(tool.name)
    const optional = hasOnlyOptionalProperties(tool.parameters) ? '?' : ''
    out.push(...jsDoc(tool.description, false, '  '))
    out.push(`  ${tsKey(tool.name)}(args${optional}: ToolArgsMap[${key}]): Promise<ToolOutputMap[${key}]>;`)
  }
  out.push('};')
  return out.join('\n')
}

/** Renders the whole TypeScript SDK text: usage instructions, then the fenced SDK block. */
export function renderTypeScriptSdk(tools: readonly SdkToolInput[]): string {
  return `${TYPESCRIPT_SDK_INSTRUCTIONS}\n\n\`\`\`ts\n${renderTypeScriptSdkBlock(tools)}\n\`\`\`\n`
}

/**
 * The TypeScript declaration of one tool, as `catalog.search` / `catalog.describe`
 * hand it to a program: its JSDoc and its `tools` member with the argument and output
 * types written out — the very types the full SDK renders in `ToolArgsMap` and
 * `ToolOutputMap` (same renderer, same options; only the indentation of continuation
 * lines differs, since the declaration stands alone).
 *
 * @example
 * ```ts
 * renderTypeScriptToolDeclaration({ name: 'get_user', description: 'Get a user.', parameters, output })
 * // '/** Get a user. *\/\nget_user(args: {\n  id: string;\n}): Promise<{\n  name: string;\n}>;'
 * ```
 */
export function renderTypeScriptToolDeclaration(tool: SdkToolInput): string {
  const [normalized] = normalizeSdkTools([tool])
  if (normalized === undefined) return ''
  const optional = hasOnlyOptionalProperties(normalized.parameters) ? '?' : ''
  const member = `${tsKey(normalized.name)}(args${optional}: ${jsonSchemaToTs(normalized.parameters)}): Promise<${jsonSchemaToTs(normalized.output)}>;`
  return [...jsDoc(normalized.description, false, ''), member].join('\n')
}
