/**
 * The compact tool index a prompt carries when the full Code Mode SDK would not fit its budget:
 * namespaces with tool counts and subjects, and how to discover the rest from a program.
 * @module
 */
import { ToolError } from '../errors.js'
import { splitWords } from './_analyze.js'
import { stem } from './_stem.js'
import { ACTION_SYNONYMS } from './_vocabulary.js'

/** One visible tool as the index sees it. */
export interface CatalogIndexTool {
  /** The tool's name, as callable. */
  readonly name: string
  /**
   * The namespace the tool belongs to, when the caller knows it (an MCP import prefix, a plugin
   * id).
   */
  readonly group?: string
}

/** The forms of the SDK section: `full` is the caller's (the whole SDK fits); this module renders the other two. */
export type CatalogIndexForm = 'index' | 'namespaces'

/** Options for {@link renderCatalogIndex}. */
export interface RenderCatalogIndexOptions {
  /** The most characters the text may take (a positive integer). */
  readonly maxChars: number
  /** The program language the discovery instructions are written for (default `'typescript'`). */
  readonly language?: 'typescript' | 'python'
}

/** What {@link renderCatalogIndex} produced. */
export interface CatalogIndexText {
  readonly text: string
  /** `index` when every namespace lists at least one tool name, otherwise `namespaces`. */
  readonly form: CatalogIndexForm
  /** How many tool names the text lists. */
  readonly listedTools: number
  /** Whether the text fits `maxChars`: false only when the heading and one summary line alone exceed it. */
  readonly fits: boolean
}

const PREFIX_SEPARATOR = /[_.\-/:]/
const SUBJECTS_PER_NAMESPACE = 5

const ACTION_WORDS = new Set(ACTION_SYNONYMS.flatMap((g) => g.words.map(stem)))
/**
 * Verbs that open tool names (`list_orders`, `get_user`): a prefix that is one of them names an
 * action, not a namespace.
 */
const LEADING_VERBS = new Set(
  'get list create update delete set add remove search find read write run send fetch put post patch upsert query check start stop open close make new edit show describe count export import download upload is has can do'.split(' '),
)

interface Namespace {
  /** How the namespace is written: `billing_*` for a derived prefix, the group key as given. */
  readonly label: string
  /** Tool names, in listing priority (see `describeNamespace`). */
  readonly names: readonly string[]
  readonly subjects: readonly string[]
}

function invalid(message: string): never {
  throw new ToolError('INVALID_OPTIONS', message)
}

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** `1000` → `1,000`: fixed formatting, because `toLocaleString` differs between runtimes. */
function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+$)/g, ',')
}

/** The name's leading segment with its separator (`billing_`), or undefined. */
function derivedPrefix(name: string): string | undefined {
  const match = PREFIX_SEPARATOR.exec(name)
  if (match === null || match.index === 0) return undefined
  const head = name.slice(0, match.index)
  const words = splitWords(head)
  if (words.length === 1 && LEADING_VERBS.has(words[0]!)) return undefined
  return name.slice(0, match.index + 1)
}

/** The subject of a tool name: its words after the namespace, without the verb. */
function subjectOf(name: string, prefix: string): { key: string; shown: string } {
  const words = splitWords(name.startsWith(prefix) ? name.slice(prefix.length) : name)
  let rest = words
  if (rest.length > 0 && (LEADING_VERBS.has(rest[0]!) || ACTION_WORDS.has(stem(rest[0]!)))) rest = rest.slice(1)
  while (rest.length > 0 && LEADING_VERBS.has(rest[rest.length - 1]!)) rest = rest.slice(0, -1)
  if (rest.length === 0) rest = words.filter((w) => !LEADING_VERBS.has(w))
  return { key: rest.map(stem).join(' '), shown: rest.join(' ') }
}

function describeNamespace(label: string, names: readonly string[], prefix: string): Namespace {
  const bySubject = new Map<string, { shown: string; names: string[] }>()
  for (const name of names) {
    const { key, shown } = subjectOf(name, prefix)
    const entry = bySubject.get(key) ?? { shown, names: [] }
    if (shown.length < entry.shown.length || (shown.length === entry.shown.length && shown < entry.shown)) entry.shown = shown
    entry.names.push(name)
    bySubject.set(key, entry)
  }
  const shortestFirst = (a: string, b: string): number => a.length - b.length || byCodePoint(a, b)
  const ranked = [...bySubject.values()]
    .map((entry) => ({ shown: entry.shown, names: entry.names.sort(shortestFirst) }))
    .sort((a, b) => b.names.length - a.names.length || byCodePoint(a.shown, b.shown))
  const order: string[] = []
  for (let turn = 0; order.length < names.length; turn++) for (const { names: group } of ranked) if (turn < group.length) order.push(group[turn]!)
  const subjects = ranked.filter((r) => r.shown !== '').slice(0, SUBJECTS_PER_NAMESPACE).map((r) => r.shown)
  return { label, names: order, subjects }
}

function readTools(tools: unknown): { name: string; group: string | undefined }[] {
  if (!Array.isArray(tools)) invalid('renderCatalogIndex: tools must be an array of { name, group? }')
  const seen = new Set<string>()
  return Array.from(tools as unknown[], (tool, i) => {
    if (typeof tool !== 'object' || tool === null) invalid(`renderCatalogIndex: tools[${i}] must be an object`)
    const { name, group } = tool as { name?: unknown; group?: unknown }
    if (typeof name !== 'string' || name === '') invalid(`renderCatalogIndex: tools[${i}].name must be a non-empty string`)
    if (group !== undefined && (typeof group !== 'string' || group === '')) {
      invalid(`renderCatalogIndex: tools[${i}] (${JSON.stringify(name)}): group must be a non-empty string when present`)
    }
    if (seen.has(name)) invalid(`renderCatalogIndex: duplicate tool name ${JSON.stringify(name)}`)
    seen.add(name)
    return { name, group }
  })
}

/**
 * Groups tools into namespaces: the caller's group key when given, else a name prefix shared by at
 * least two tools.
 */
function namespacesOf(tools: readonly { name: string; group: string | undefined }[]): Namespace[] {
  const prefixCounts = new Map<string, number>()
  for (const { name, group } of tools) {
    const prefix = group === undefined ? derivedPrefix(name) : undefined
    if (prefix !== undefined) prefixCounts.set(prefix, (prefixCounts.get(prefix) ?? 0) + 1)
  }
  const members = new Map<string, { prefix: string; names: string[] }>()
  const others: string[] = []
  for (const { name, group } of tools) {
    const prefix = group === undefined ? derivedPrefix(name) : undefined
    const label = group ?? (prefix !== undefined && prefixCounts.get(prefix)! >= 2 ? `${prefix}*` : undefined)
    if (label === undefined) {
      others.push(name)
      continue
    }
    const entry = members.get(label) ?? { prefix: prefix ?? '', names: [] }
    entry.names.push(name)
    members.set(label, entry)
  }
  if (members.size === 0) return others.length === 0 ? [] : [describeNamespace('tools', others.sort(byCodePoint), '')]
  const namespaces = [...members.entries()]
    .sort(([a], [b]) => byCodePoint(a, b))
    .map(([label, { prefix, names }]) => describeNamespace(label, names.sort(byCodePoint), prefix))
  if (others.length > 0) namespaces.push(describeNamespace('other tools', others.sort(byCodePoint), ''))
  return namespaces
}

function heading(toolCount: number, namespaceCount: number, language: 'typescript' | 'python', withNames: boolean): string {
  const where = namespaceCount > 1 ? ` in ${formatCount(namespaceCount)} namespaces` : ''
  const search = language === 'python' ? 'await catalog.search(query, {"limit": 5})' : 'await catalog.search(query, { limit: 5 })'
  const declaration = language === 'python' ? 'the Python declaration' : 'the TypeScript declaration'
  return [
    '## Tool catalog',
    '',
    `${formatCount(toolCount)} tools${where}: too many to declare here, but every one is callable as \`await tools.<name>(args)\`. Find the ones you need from inside your program:`,
    `- \`${search}\` → \`[{ name, description, declaration }]\`, best match first; \`query\` is plain words ("refund an order", "count open tickets").`,
    `- \`await catalog.describe(name)\` → ${declaration} of that tool's arguments and output.`,
    '',
    withNames ? 'Namespaces (tool count: main subjects — some of their tools):' : 'Namespaces (tool count: main subjects):',
  ].join('\n')
}

function namespaceLine(ns: Namespace, listed: number): string {
  const subjects = ns.subjects.length > 0 ? `: ${ns.subjects.join(', ')}` : ''
  const head = `- ${ns.label} (${formatCount(ns.names.length)}${subjects})`
  if (listed === 0) return head
  const names = [...ns.names.slice(0, listed)].sort(byCodePoint).join(', ')
  const more = ns.names.length - listed
  return `${head} — ${names}${more > 0 ? `, +${formatCount(more)} more` : ''}`
}

/**
 * Adds names round-robin (one more per namespace per round, shortest names first) while the text
 * stays within `maxChars`.
 */
function fillNames(namespaces: readonly Namespace[], fixed: number, maxChars: number): number[] {
  const listed = namespaces.map(() => 0)
  const lengths = namespaces.map((ns) => namespaceLine(ns, 0).length)
  let total = fixed + lengths.reduce((sum, n) => sum + n + 1, 0)
  const full = namespaces.map((ns) => ns.names.length === 0)
  while (full.includes(false)) {
    namespaces.forEach((ns, i) => {
      if (full[i]) return
      const next = namespaceLine(ns, listed[i]! + 1).length
      if (total - lengths[i]! + next > maxChars) {
        full[i] = true
        return
      }
      total += next - lengths[i]!
      lengths[i] = next
      listed[i]!++
      if (listed[i] === ns.names.length) full[i] = true
    })
  }
  return listed
}

/**
 * Renders the compact index of `tools` within `options.maxChars` characters: the `index` form
 * (every namespace with some tool names) when at least one name per namespace fits, else the
 * `namespaces` form (namespaces only; the smallest are folded into a last line when even those do
 * not fit).
 * @example
 * ```ts
 * const { text, form } = renderCatalogIndex(visibleTools, { maxChars: 6_000 })
 * // form === 'index'; text starts with '## Tool catalog'
 * ```
 */
export function renderCatalogIndex(tools: readonly CatalogIndexTool[], options: RenderCatalogIndexOptions): CatalogIndexText {
  const entries = readTools(tools)
  if (typeof options !== 'object' || options === null) invalid('renderCatalogIndex: options { maxChars } are required')
  const { maxChars, language = 'typescript' } = options
  if (typeof maxChars !== 'number' || !Number.isInteger(maxChars) || maxChars < 1) {
    invalid(`renderCatalogIndex: maxChars must be a positive integer (got ${String(maxChars)})`)
  }
  if (language !== 'typescript' && language !== 'python') invalid(`renderCatalogIndex: language must be 'typescript' or 'python' (got ${String(language)})`)

  const namespaces = namespacesOf(entries)
  const indexHead = heading(entries.length, namespaces.length, language, true)
  const listed = fillNames(namespaces, indexHead.length, maxChars)
  if (namespaces.length > 0 && listed.every((n) => n > 0)) {
    const text = [indexHead, ...namespaces.map((ns, i) => namespaceLine(ns, listed[i]!))].join('\n')
    return { text, form: 'index', listedTools: listed.reduce((a, b) => a + b, 0), fits: true }
  }
  return renderNamespacesOnly(entries.length, namespaces, language, maxChars)
}

/** The namespaces form, dropping the smallest namespaces (into one summary line) until it fits. */
function renderNamespacesOnly(toolCount: number, namespaces: readonly Namespace[], language: 'typescript' | 'python', maxChars: number): CatalogIndexText {
  const head = heading(toolCount, namespaces.length, language, false)
  // Keep the largest namespaces: by size, then label, so the choice is stable.
  const keepOrder = namespaces.map((ns, i) => i).sort((a, b) => namespaces[b]!.names.length - namespaces[a]!.names.length || byCodePoint(namespaces[a]!.label, namespaces[b]!.label))
  for (let keep = namespaces.length; ; keep--) {
    const kept = new Set(keepOrder.slice(0, keep))
    const lines = namespaces.filter((_, i) => kept.has(i)).map((ns) => namespaceLine(ns, 0))
    const dropped = namespaces.filter((_, i) => !kept.has(i))
    if (dropped.length > 0) {
      const count = dropped.reduce((sum, ns) => sum + ns.names.length, 0)
      lines.push(`- ${formatCount(dropped.length)} more namespaces (${formatCount(count)} tools): use catalog.search`)
    }
    const text = [head, ...lines].join('\n')
    if (text.length <= maxChars || keep === 0) return { text, form: 'namespaces', listedTools: 0, fits: text.length <= maxChars }
  }
}
