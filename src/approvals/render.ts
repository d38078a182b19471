/**
 * The one renderer of a call's arguments for the person who approves it, schema order first,
 * bounded and escaped, every cut counted (docs/approvals.md). Never throws.
 *
 * @module
 */
import { utf8Length } from '../util/utf8.js'
import { isRecord } from '../util/guards.js'

/** The default byte budget of a rendered summary. */
export const DEFAULT_APPROVAL_RENDER_BYTES = 4096

/** The smallest budget `maxBytes` accepts (smaller values are raised to it). */
const MIN_RENDER_BYTES = 512
/** Characters shown at each end of a long string. */
const EDGE_CHARS = 120
/** Strings (and keys) at most this long are shown whole. */
const WHOLE_CHARS = 2 * EDGE_CHARS + 40
/** Keys longer than this are shown as head … tail with their length. */
const KEY_CHARS = 60
/** Items of an array, or keys of a free-form object, shown before the rest are counted. */
const MAX_ENTRIES = 20
/** Values visited in one render (the work bound). */
const MAX_NODES = 400
/** Levels of nesting shown; deeper values are summarised by size. */
const MAX_DEPTH = 6
/** Bytes kept for the line that says what a parameter's share of the budget left out. */
const MARKER_BYTES = 120

/** What {@link renderApprovalArguments} answers. Frozen. */
export interface RenderedApprovalArguments {
  /** The lines a person reads, at most `maxBytes` UTF-8 bytes. */
  readonly text: string
  /** The top-level keys the tool does not declare, in the caller's order (at most 50; a key over 60 characters shortened). */
  readonly undeclared: readonly string[]
  /** How many top-level keys the tool does not declare. */
  readonly undeclaredCount: number
  /** False when the budget left something out (the text says what). */
  readonly complete: boolean
}

/** The tool as the renderer needs it: its name and its declared parameters (a JSON Schema object). */
export interface ApprovalRenderTool {
  readonly name: string
  /** The tool's `parameters` schema; absent or unreadable → every key counts as undeclared. */
  readonly parameters?: unknown
}

/** Options of {@link renderApprovalArguments}. */
export interface ApprovalRenderOptions {
  /** The byte budget of `text` (default {@link DEFAULT_APPROVAL_RENDER_BYTES}, at least 512). */
  readonly maxBytes?: number
}

type Schema = Readonly<Record<string, unknown>>

/** An own data property, never running a getter (the schema may come from anyone calling the broker). */
function own(source: unknown, key: string): unknown {
  if (!isRecord(source)) return undefined
  const descriptor = Object.getOwnPropertyDescriptor(source, key)
  return descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined
}

/**
 * The properties an object schema declares, in declaration order: its own `properties`,
 * then those of its `oneOf` branches not named yet. `undefined` when it declares none.
 */
export function declaredProperties(schema: unknown): ReadonlyMap<string, Schema> | undefined {
  const found = new Map<string, Schema>()
  const take = (node: unknown): void => {
    const properties = own(node, 'properties')
    if (!isRecord(properties)) return
    for (const key of Object.keys(properties)) {
      const child = own(properties, key)
      if (!found.has(key)) found.set(key, isRecord(child) ? child : {})
    }
  }
  take(schema)
  const branches = own(schema, 'oneOf')
  if (Array.isArray(branches)) for (const branch of branches.slice(0, 64)) take(branch)
  return found.size === 0 && !isRecord(own(schema, 'properties')) ? undefined : found
}

// Characters a prompt must never show raw: C0/C1 controls, line and paragraph
// separators, bidi overrides and isolates, zero-width characters and the BOM.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"\\]/g

function escapeChar(ch: string): string {
  if (ch === '"') return '\\"'
  if (ch === '\\') return '\\\\'
  if (ch === '\n') return '\\n'
  if (ch === '\t') return '\\t'
  if (ch === '\r') return '\\r'
  return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`
}

/** A string in double quotes, every unsafe character escaped. */
function quote(text: string): string {
  return `"${text.replace(UNSAFE, escapeChar)}"`
}

/** A cut that does not split a surrogate pair. */
function headOf(text: string, n: number): string {
  const end = n > 0 && /[\ud800-\udbff]/.test(text[n - 1] ?? '') ? n - 1 : n
  return text.slice(0, end)
}

function tailOf(text: string, n: number): string {
  const start = text.length - n
  return text.slice(/[\udc00-\udfff]/.test(text[start] ?? '') ? start + 1 : start)
}

/** A long string as its length, head and tail, within `allowance` bytes when it can be. */
function longString(text: string, allowance: number, noun: string): string {
  for (let edge = EDGE_CHARS; edge >= 8; edge = Math.floor(edge / 2)) {
    const hidden = text.length - 2 * edge
    const shown = `${noun} of ${text.length} characters: ${quote(headOf(text, edge))} … [${hidden} characters not shown] … ${quote(tailOf(text, edge))}`
    if (utf8Length(shown) <= allowance) return shown
  }
  return `${noun} of ${text.length} characters (not shown: over the prompt's budget)`
}

function showString(text: string, allowance: number): string {
  if (text.length <= WHOLE_CHARS) {
    const whole = quote(text)
    if (utf8Length(whole) <= allowance) return whole
  }
  return longString(text, allowance, 'string')
}

function showKey(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]{0,59}$/.test(key) ? key : key.length <= KEY_CHARS ? quote(key) : longString(key, 400, 'a key')
}

function sizeOf(value: unknown): string {
  if (Array.isArray(value)) return `array of ${value.length} items`
  if (isRecord(value)) return `object with ${Object.keys(value).length} keys`
  return typeof value
}

/** Collects lines for one top-level entry within its share of the budget. */
class Lines {
  readonly lines: string[] = []
  bytes = 0
  dropped = 0
  constructor(readonly cap: number) {}

  /** Room for one more line's value text after `prefix` (the marker's bytes kept back). */
  room(prefix: string): number {
    return Math.max(0, this.cap - MARKER_BYTES - this.bytes - utf8Length(prefix) - 1)
  }

  push(line: string): void {
    const size = utf8Length(line) + 1
    if (this.dropped > 0 || this.bytes + size > this.cap - MARKER_BYTES) this.dropped++
    else {
      this.lines.push(line)
      this.bytes += size
    }
  }
}

/** The state of one render: the node budget it spends. */
interface Walk {
  nodes: number
  complete: boolean
}

function renderValue(walk: Walk, out: Lines, indent: string, label: string, schema: Schema | undefined, value: unknown, depth: number): void {
  // Once this parameter's share is full, deeper values are counted, not walked: the work
  // stays bounded by what can still be shown.
  if (depth > 0 && out.dropped > 0) {
    out.dropped++
    return
  }
  walk.nodes++
  const prefix = `${indent}${label}: `
  // Top-level parameters are always shown (their number is bounded by the schema and MAX_ENTRIES).
  if (depth > 0 && walk.nodes > MAX_NODES) {
    walk.complete = false
    out.push(`${prefix}(${sizeOf(value)}; not shown: the prompt's work bound of ${MAX_NODES} values)`)
    return
  }
  if (value === undefined) return out.push(`${prefix}(not given)`)
  if (typeof value === 'string') {
    const shown = showString(value, out.room(prefix))
    if (!shown.startsWith('"')) walk.complete = false
    return out.push(`${prefix}${shown}`)
  }
  if (value === null || typeof value !== 'object') return out.push(`${prefix}${JSON.stringify(value) ?? String(value)}`)
  if (depth >= MAX_DEPTH) {
    walk.complete = false
    return out.push(`${prefix}(${sizeOf(value)}; deeper than ${MAX_DEPTH} levels: not shown)`)
  }
  if (Array.isArray(value)) return renderArray(walk, out, indent, prefix, schema, value, depth)
  renderObject(walk, out, indent, prefix, schema, value as Readonly<Record<string, unknown>>, depth)
}

function renderArray(walk: Walk, out: Lines, indent: string, prefix: string, schema: Schema | undefined, value: readonly unknown[], depth: number): void {
  out.push(`${prefix}array of ${value.length} items`)
  const items = own(schema, 'items')
  const shown = Math.min(value.length, MAX_ENTRIES)
  for (let i = 0; i < shown; i++) renderValue(walk, out, `${indent}  `, `[${i}]`, isRecord(items) ? items : undefined, value[i], depth + 1)
  if (value.length > shown) {
    walk.complete = false
    out.push(`${indent}  … ${value.length - shown} more items not shown`)
  }
}

function renderObject(
  walk: Walk,
  out: Lines,
  indent: string,
  prefix: string,
  schema: Schema | undefined,
  value: Readonly<Record<string, unknown>>,
  depth: number,
): void {
  const declared = declaredProperties(schema)
  const keys = Object.keys(value)
  const extra = declared === undefined ? keys : keys.filter((key) => !declared.has(key))
  out.push(`${prefix}object with ${keys.length} keys${declared !== undefined && extra.length > 0 ? ` (${extra.length} undeclared)` : ''}`)
  const inner = `${indent}  `
  for (const [key, child] of declared ?? []) renderValue(walk, out, inner, showKey(key), child, value[key], depth + 1)
  const shown = Math.min(extra.length, MAX_ENTRIES)
  const flag = declared === undefined ? '' : '⚠ undeclared '
  for (let i = 0; i < shown; i++) {
    const key = extra[i] as string
    renderValue(walk, out, inner, `${flag}${showKey(key)}`, undefined, value[key], depth + 1)
  }
  if (extra.length > shown) {
    walk.complete = false
    out.push(`${inner}… ${extra.length - shown} more ${flag}keys not shown`)
  }
}

function finish(out: Lines): string[] {
  if (out.dropped === 0) return out.lines
  return [...out.lines, `  … ${out.dropped} more entries of this value not shown (the prompt's budget)`]
}

function readMaxBytes(options: ApprovalRenderOptions | undefined): number {
  const max = options?.maxBytes
  return typeof max === 'number' && Number.isFinite(max) ? Math.max(MIN_RENDER_BYTES, Math.floor(max)) : DEFAULT_APPROVAL_RENDER_BYTES
}

/**
 * Renders a call's arguments for the person who approves it: the tool's declared
 * parameters in schema order (absent ones as `(not given)`), then the keys it does not
 * declare, flagged `⚠ undeclared` and announced on the first line. A long string shows
 * its length, its first and last 120 characters; an array its first 20 items and how
 * many more; nothing is left out without saying so. Each top-level parameter gets a fair
 * share of the byte budget, so no value can push another out of the prompt.
 *
 * @example
 * ```ts
 * renderApprovalArguments({ name: 'write_file', parameters: tool.parameters }, { note: 'x'.repeat(5000), path: 'a.ts', content: '…' }).text
 * // ⚠ 1 undeclared key (not a parameter of write_file), listed last
 * // path: "a.ts"
 * // content: "…"
 * // ⚠ undeclared note: string of 5000 characters: "xxx…" … [4760 characters not shown] … "…xxx"
 * ```
 */
export function renderApprovalArguments(tool: ApprovalRenderTool, args: unknown, options?: ApprovalRenderOptions): RenderedApprovalArguments {
  const maxBytes = readMaxBytes(options)
  try {
    return render(tool, args, maxBytes)
  } catch {
    // A hostile value (a Proxy reached by a direct handler call) still gets a truthful answer.
    return Object.freeze({ text: '(the arguments could not be read)', undeclared: Object.freeze([]), undeclaredCount: 0, complete: false })
  }
}

function render(tool: ApprovalRenderTool, args: unknown, maxBytes: number): RenderedApprovalArguments {
  const name = typeof tool.name === 'string' ? tool.name : 'the tool'
  const walk: Walk = { nodes: 0, complete: true }
  if (!isRecord(args)) {
    const out = new Lines(maxBytes)
    renderValue(walk, out, '', 'arguments', undefined, args, 0)
    return Object.freeze({ text: finish(out).join('\n'), undeclared: Object.freeze([]), undeclaredCount: 0, complete: walk.complete && out.dropped === 0 })
  }
  const declared = declaredProperties(tool.parameters) ?? new Map<string, Schema>()
  const keys = Object.keys(args)
  const extra = keys.filter((key) => !declared.has(key))
  const header =
    extra.length === 0
      ? []
      : [`⚠ ${extra.length} undeclared key${extra.length === 1 ? '' : 's'} (not ${extra.length === 1 ? 'a parameter' : 'parameters'} of ${name}), listed last`]
  const entries: { readonly label: string; readonly schema?: Schema; readonly value: unknown }[] = [...declared].map(([key, schema]) => ({
    label: showKey(key),
    schema,
    value: args[key],
  }))
  const shownExtra = Math.min(extra.length, MAX_ENTRIES)
  for (let i = 0; i < shownExtra; i++) entries.push({ label: `⚠ undeclared ${showKey(extra[i] as string)}`, value: args[extra[i] as string] })
  const lines = [...header]
  // One line's worth is kept back for the note that says what the budget left out.
  let remaining = maxBytes - utf8Length(header.join('\n')) - 1 - MARKER_BYTES
  if (entries.length === 0) lines.push('(no arguments)')
  let rendered = 0
  for (; rendered < entries.length; rendered++) {
    const share = Math.floor(remaining / (entries.length - rendered))
    if (share < 2 * MARKER_BYTES) break
    const entry = entries[rendered] as (typeof entries)[number]
    const out = new Lines(share)
    renderValue(walk, out, '', entry.label, entry.schema, entry.value, 0)
    const text = finish(out)
    if (out.dropped > 0) walk.complete = false
    remaining -= utf8Length(text.join('\n')) + 1
    lines.push(...text)
  }
  const left = entries.length - rendered + (extra.length - shownExtra)
  if (left > 0) {
    walk.complete = false
    lines.push(`… ${left} more ${rendered < declared.size ? 'parameters and keys' : 'undeclared keys'} not shown (the prompt's budget)`)
  }
  const undeclared = Object.freeze(extra.slice(0, 50).map((key) => (key.length > KEY_CHARS ? `${headOf(key, 40)}…(${key.length} characters)` : key)))
  return Object.freeze({ text: lines.join('\n'), undeclared, undeclaredCount: extra.length, complete: walk.complete })
}

/** A JSON Pointer token; a key longer than 60 characters is shortened (it is only ever shown). */
function pointerToken(key: string): string {
  const shown = key.length > KEY_CHARS ? `${headOf(key, 40)}…(${key.length} characters)` : key
  return shown.replaceAll('~', '~0').replaceAll('/', '~1')
}

/**
 * The keys of `args` that `parameters` does not declare, as JSON Pointers (`/note`,
 * `/options/extra`; a key over 60 characters shortened), at most `limit` of them: in every object the schema declares
 * `properties` for (even none: `properties: {}`) and does not open explicitly with
 * `additionalProperties: true`. A free-form object (no `properties`) is not checked. A call
 * that asks for approval is refused when this is non-empty (see docs/approvals.md).
 * Iterative (stack-safe) and linear in the arguments' size.
 */
export function undeclaredArgumentPaths(parameters: unknown, args: unknown, limit = 20): readonly string[] {
  const found: string[] = []
  const stack: { readonly schema: unknown; readonly value: unknown; readonly path: string }[] = [{ schema: parameters, value: args, path: '' }]
  while (stack.length > 0 && found.length < limit) {
    const { schema, value, path } = stack.pop() as (typeof stack)[number]
    if (Array.isArray(value)) {
      const items = own(schema, 'items')
      if (isRecord(items)) for (let i = value.length - 1; i >= 0; i--) stack.push({ schema: items, value: value[i], path: `${path}/${i}` })
      continue
    }
    if (!isRecord(value)) continue
    const declared = declaredProperties(schema)
    // A free-form object (no `properties` at all) declares no keys to hold a call to: its
    // keys are shown, flagged, by the renderer instead.
    if (declared === undefined) continue
    const open = own(schema, 'additionalProperties') === true
    const children: (typeof stack)[number][] = []
    for (const key of Object.keys(value)) {
      const child = declared?.get(key)
      const pointer = `${path}/${pointerToken(key)}`
      if (child !== undefined) children.push({ schema: child, value: value[key], path: pointer })
      else if (!open) found.push(pointer)
    }
    // Reversed, so the walk visits children in the caller's order.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as (typeof stack)[number])
  }
  return Object.freeze(found.slice(0, limit))
}

/** The default byte budget of a rendered preview (`renderApprovalPreview`). */
export const DEFAULT_PREVIEW_RENDER_BYTES = 4096
/** Characters of one preview line shown before the rest of the line is counted. */
const PREVIEW_LINE_CHARS = 300
/** What every unavailable preview starts with. */
export const PREVIEW_UNAVAILABLE = 'preview unavailable: '

// As UNSAFE, but a preview is multi-line text, not a quoted value: newlines split it and
// tabs stay; quotes and backslashes are the text's own (an escape is shown as ⟨U+XXXX⟩,
// which no escaping of the text could be confused with).
// eslint-disable-next-line no-control-regex
const PREVIEW_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g

function showPreviewChar(ch: string): string {
  return `⟨U+${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`
}

/** `preview unavailable: <reason>`, the reason escaped and bounded (it may quote an error of the tool's). */
export function previewUnavailable(reason: string): string {
  const line = reason.replace(/\r?\n/g, ' ').replace(PREVIEW_UNSAFE, showPreviewChar)
  return `${PREVIEW_UNAVAILABLE}${line.length > PREVIEW_LINE_CHARS ? `${headOf(line, PREVIEW_LINE_CHARS)}…` : line}`
}

/**
 * Renders what a tool's `preview` said a call will do, for the person who approves it:
 * line by line, control, bidi and zero-width characters shown as `⟨U+XXXX⟩`, a line over
 * 300 characters cut with the count of what is left out, at most `maxBytes` UTF-8 bytes
 * (default {@link DEFAULT_PREVIEW_RENDER_BYTES}, at least 512). A cut is never silent:
 * the last line says how many lines and characters were not shown. Anything but a
 * string renders as `preview unavailable: …`. Work is bounded by the bytes shown (the
 * rest is counted, not walked). Never throws; idempotent on its own output.
 *
 * @example
 * ```ts
 * renderApprovalPreview('overwrites README.md: 10 lines → 2 lines\n--- a/README.md\n+++ b/README.md\n…')
 * ```
 */
export function renderApprovalPreview(preview: unknown, options?: ApprovalRenderOptions): string {
  if (typeof preview !== 'string') return previewUnavailable(`the tool's preview answered ${preview === null ? 'null' : typeof preview}, not text`)
  const maxBytes = readMaxBytes({ maxBytes: options?.maxBytes ?? DEFAULT_PREVIEW_RENDER_BYTES })
  const lines: string[] = []
  let bytes = 0
  let position = 0
  // Where the text can still be cut with room for the note that says so.
  let cut = { lines: 0, position: 0 }
  while (position < preview.length) {
    const newline = preview.indexOf('\n', position)
    const end = newline === -1 ? preview.length : newline
    const raw = preview.slice(position, Math.min(end, position + PREVIEW_LINE_CHARS)).replace(/\r$/, '')
    const hidden = end - position - PREVIEW_LINE_CHARS
    const shown = raw.replace(PREVIEW_UNSAFE, showPreviewChar) + (hidden > 0 ? ` … [${hidden} more characters of this line not shown]` : '')
    bytes += utf8Length(shown) + (lines.length === 0 ? 0 : 1)
    if (bytes > maxBytes) break
    lines.push(shown)
    position = newline === -1 ? preview.length : newline + 1
    if (bytes <= maxBytes - MARKER_BYTES) cut = { lines: lines.length, position }
  }
  // Everything fits: shown whole (so rendering the output again changes nothing).
  if (position >= preview.length) return lines.join('\n')
  lines.length = cut.lines
  let more = 1
  for (let at = preview.indexOf('\n', cut.position); at !== -1 && at < preview.length - 1; at = preview.indexOf('\n', at + 1)) more++
  lines.push(`… preview cut: ${more} more line${more === 1 ? '' : 's'} (${preview.length - cut.position} characters) not shown (the prompt's budget of ${maxBytes} bytes)`)
  return lines.join('\n')
}
