/**
 * A deterministic lexical search over tools, for Code Mode's `catalog.search` and for "did you
 * mean" suggestions: no model, no network, web standards only (it runs the same in Node, browsers
 * and workerd).
 * @module
 */
import { ToolError } from '../errors.js'
import { analyze, expandTerm } from './_analyze.js'
import { isRecord } from '../util/guards.js'

/** One tool as the catalog sees it. */
export interface CatalogEntry {
  /** The tool's name, as callable (`billing_list_invoices`). Unique within a catalog. */
  readonly name: string
  /** The tool's description. */
  readonly description: string
  /**
   * The tool's parameter schema (a JSON Schema object): its property names, enum values,
   * titles and descriptions are indexed, nested objects and array items included.
   */
  readonly parameters?: unknown
}

/** One search result. */
export interface CatalogHit {
  /** The tool's name. */
  readonly name: string
  /** The relevance score, rounded to 6 decimals; higher is better, always > 0. */
  readonly score: number
}

/** Options for {@link Catalog.search}. */
export interface CatalogSearchOptions {
  /** How many hits at most (a positive integer; default {@link DEFAULT_SEARCH_LIMIT}). */
  readonly limit?: number
}

/** A built catalog: immutable, rebuilt when the tool set changes. */
export interface Catalog {
  /** How many tools it holds. */
  readonly size: number
  /** The tools that match `query`, best first: by score, ties by name in code point order. */
  search(query: string, options?: CatalogSearchOptions): readonly CatalogHit[]
  /**
   * "Did you mean": the names closest to `name` (a name that is not in the catalog), by spelling
   * (edit distance) and by shared words (synonyms included, so `billing_remove_invoice` suggests
   * `billing_delete_invoice`).
   */
  closest(name: string, limit?: number): readonly string[]
}

/** The default number of hits {@link Catalog.search} returns. */
export const DEFAULT_SEARCH_LIMIT = 10
/** The default number of names {@link Catalog.closest} returns. */
export const DEFAULT_CLOSEST_LIMIT = 3

/** Field weights and length normalisation (BM25F). */
const FIELDS = [
  { weight: 3, b: 0.3 }, // name
  { weight: 1, b: 0.75 }, // description
  { weight: 0.5, b: 0.5 }, // parameter names and enum values
  { weight: 0.2, b: 0.75 }, // parameter titles and descriptions
] as const
const K1 = 1.2
/** Coordination: a tool's score is scaled by. */
const COORDINATION = 0.5

/** Bounds on one query's work: a 10 KB paste costs the same as a long sentence. */
const MAX_QUERY_CHARS = 2_000
const MAX_QUERY_TERMS = 32
const MAX_CACHED_TERMS = 4_096
const MAX_INSERTION_LIMIT = 64
/** Bounds on the schema walk per tool: stack-free, and a huge schema cannot stall the build. */
const MAX_SCHEMA_NODES = 500

/** A term's tools and its saturated BM25F term frequency in each (idf applied at query time). */
interface Posting {
  readonly idf: number
  readonly docs: Int32Array
  readonly saturated: Float64Array
}

function invalid(message: string): never {
  throw new ToolError('INVALID_OPTIONS', message)
}

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** The parameter texts of a schema: [names and enum values, titles and descriptions]. */
function parameterTexts(schema: unknown): [string, string] {
  const names: string[] = []
  const texts: string[] = []
  const stack: unknown[] = [schema]
  let visited = 0
  while (stack.length > 0 && visited < MAX_SCHEMA_NODES) {
    const node = stack.pop()
    visited++
    if (!isRecord(node)) continue
    if (visited > 1) {
      if (typeof node.title === 'string') texts.push(node.title)
      if (typeof node.description === 'string') texts.push(node.description)
    }
    if (Array.isArray(node.enum)) for (const v of node.enum) if (typeof v === 'string' || typeof v === 'number') names.push(String(v))
    if (typeof node.const === 'string') names.push(node.const)
    if (isRecord(node.properties)) {
      for (const key of Object.keys(node.properties)) {
        names.push(key)
        stack.push(node.properties[key])
      }
    }
    if (isRecord(node.items)) stack.push(node.items)
    if (Array.isArray(node.oneOf)) for (const branch of node.oneOf) stack.push(branch)
  }
  return [names.join(' '), texts.join(' ')]
}

function readEntries(entries: unknown): CatalogEntry[] {
  if (!Array.isArray(entries)) invalid('createCatalog: entries must be an array of { name, description, parameters? }')
  const seen = new Set<string>()
  // Array.from visits holes too: a sparse array fails on its hole instead of skipping it.
  return Array.from(entries as unknown[], (entry, i) => {
    if (!isRecord(entry)) invalid(`createCatalog: entries[${i}] must be an object`)
    const { name, description, parameters } = entry
    if (typeof name !== 'string' || name === '') invalid(`createCatalog: entries[${i}].name must be a non-empty string`)
    if (typeof description !== 'string') invalid(`createCatalog: entries[${i}] (${JSON.stringify(name)}): description must be a string`)
    if (parameters !== undefined && !isRecord(parameters)) {
      invalid(`createCatalog: entries[${i}] (${JSON.stringify(name)}): parameters must be a JSON Schema object when present`)
    }
    if (seen.has(name)) invalid(`createCatalog: duplicate tool name ${JSON.stringify(name)}`)
    seen.add(name)
    return { name, description, parameters }
  })
}

function readLimit(value: unknown, fallback: number, where: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) invalid(`${where}: limit must be a positive integer (got ${String(value)})`)
  return value
}

function termCounts(terms: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1)
  return counts
}

function buildPostings(docs: readonly CatalogEntry[]): Map<string, Posting> {
  const fieldCounts = docs.map((doc) => {
    const [paramNames, paramTexts] = parameterTexts(doc.parameters)
    return [analyze(doc.name), analyze(doc.description), analyze(paramNames), analyze(paramTexts)].map((terms) => ({
      counts: termCounts(terms),
      length: terms.length,
    }))
  })
  const averages = FIELDS.map((_, f) => Math.max(1, fieldCounts.reduce((sum, fields) => sum + fields[f]!.length, 0) / Math.max(1, docs.length)))

  const lists = new Map<string, { docs: number[]; tfs: number[] }>()
  fieldCounts.forEach((fields, d) => {
    const weighted = new Map<string, number>()
    fields.forEach(({ counts, length }, f) => {
      const { weight, b } = FIELDS[f]!
      const norm = 1 - b + (b * length) / averages[f]!
      for (const [term, tf] of counts) weighted.set(term, (weighted.get(term) ?? 0) + (weight * tf) / norm)
    })
    for (const [term, tf] of weighted) {
      const list = lists.get(term) ?? { docs: [], tfs: [] }
      list.docs.push(d)
      list.tfs.push(tf)
      lists.set(term, list)
    }
  })

  const postings = new Map<string, Posting>()
  for (const [term, list] of lists) {
    const saturated = Float64Array.from(list.tfs, (tf) => (tf * (K1 + 1)) / (K1 + tf))
    postings.set(term, { idf: idf(docs.length, list.docs.length), docs: Int32Array.from(list.docs), saturated })
  }
  return postings
}

/** BM25's inverse document frequency (never negative). */
function idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5))
}

function queryTerms(query: string): string[] {
  const terms = [...new Set(analyze(query.slice(0, MAX_QUERY_CHARS)))]
  return terms.slice(0, MAX_QUERY_TERMS)
}

/** Best first: higher score, then name in code point order. */
function before(a: CatalogHit, b: CatalogHit): boolean {
  return a.score > b.score || (a.score === b.score && a.name < b.name)
}

/**
 * Inserts `hit` into `ranked` (kept sorted, at most `limit` long): a top-k without
 * sorting every matching tool, since most searches keep a handful out of hundreds.
 */
function insertRanked(ranked: CatalogHit[], hit: CatalogHit, limit: number): void {
  if (ranked.length === limit && !before(hit, ranked[limit - 1]!)) return
  let lo = 0
  let hi = ranked.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (before(ranked[mid]!, hit)) lo = mid + 1
    else hi = mid
  }
  ranked.splice(lo, 0, hit)
  if (ranked.length > limit) ranked.pop()
}

/** Rounding makes ties exact, so the name decides them the same on every engine. */
const round = (score: number): number => Math.round(score * 1e6) / 1e6

/**
 * Builds a catalog over `entries`.
 * @example
 * ```ts
 * const catalog = createCatalog([
 *   { name: 'storage_delete_bucket', description: 'Permanently delete a bucket.', parameters: { type: 'object', properties: { bucket: { type: 'string' } } } },
 *   { name: 'storage_list_buckets', description: 'List buckets.' },
 * ])
 * catalog.search('remove the staging bucket', { limit: 1 }) // [{ name: 'storage_delete_bucket', score: … }]
 * catalog.closest('storage_remove_bucket') // ['storage_delete_bucket', …]
 * ```
 */
export function createCatalog(entries: readonly CatalogEntry[]): Catalog {
  const docs = readEntries(entries).sort((a, b) => byCodePoint(a.name, b.name))
  const names = docs.map((d) => d.name)
  const postings = buildPostings(docs)
  const nameTerms = docs.map((d) => new Set(analyze(d.name)))
  const foldedNames = names.map((n) => n.toLowerCase().slice(0, MAX_EDIT_LENGTH))
  // Scratch buffers reused by every search: a search runs synchronously to the end.
  const total = new Float64Array(docs.length)
  const best = new Float64Array(docs.length)
  const termsMatched = new Uint16Array(docs.length)

  // The shared idf depends only on the term: cached, and the cache is bounded because
  // query terms are unbounded (the scratch `best` buffer marks tools while counting).
  const sharedIdfs = new Map<string, number>()
  function sharedIdfOf(term: string, expansions: readonly { posting: Posting }[]): number {
    const cached = sharedIdfs.get(term)
    if (cached !== undefined) return cached
    const reached: number[] = []
    for (const { posting } of expansions) {
      for (const d of posting.docs) {
        if (best[d] === 0) reached.push(d)
        best[d] = 1
      }
    }
    for (const d of reached) best[d] = 0
    if (sharedIdfs.size >= MAX_CACHED_TERMS) sharedIdfs.clear()
    const value = idf(docs.length, reached.length)
    sharedIdfs.set(term, value)
    return value
  }

  function scoreTerm(term: string, matched: number[]): boolean {
    const expansions = expandTerm(term).flatMap(([word, weight]) => {
      const posting = postings.get(word)
      return posting === undefined ? [] : [{ posting, weight, exact: word === term }]
    })
    const sharedIdf = sharedIdfOf(term, expansions)
    const touched: number[] = []
    for (const { posting, weight, exact } of expansions) {
      const factor = weight * (exact ? posting.idf : Math.min(posting.idf, sharedIdf))
      for (let i = 0; i < posting.docs.length; i++) {
        const d = posting.docs[i]!
        const score = factor * posting.saturated[i]!
        if (best[d] === 0) touched.push(d)
        if (score > best[d]!) best[d] = score
      }
    }
    for (const d of touched) {
      if (total[d] === 0) matched.push(d)
      total[d] = total[d]! + best[d]!
      termsMatched[d]!++
      best[d] = 0
    }
    return touched.length > 0
  }

  function search(query: string, options?: CatalogSearchOptions): readonly CatalogHit[] {
    if (typeof query !== 'string') invalid(`catalog.search: query must be a string (got ${query === null ? 'null' : typeof query})`)
    if (options !== undefined && !isRecord(options)) invalid('catalog.search: options must be an object when present')
    const limit = readLimit(options?.limit, DEFAULT_SEARCH_LIMIT, 'catalog.search')
    const matched: number[] = []
    let known = 0
    for (const term of queryTerms(query)) if (scoreTerm(term, matched)) known++
    let ranked: CatalogHit[] = []
    const select = limit <= MAX_INSERTION_LIMIT
    for (const d of matched) {
      const hit = { name: names[d]!, score: round(total[d]! * (termsMatched[d]! / known) ** COORDINATION) }
      if (select) insertRanked(ranked, hit, limit)
      else ranked.push(hit)
      total[d] = 0
      termsMatched[d] = 0
    }
    if (!select) ranked = ranked.sort((a, b) => (before(a, b) ? -1 : 1)).slice(0, limit)
    return ranked.map((hit) => Object.freeze(hit))
  }

  function closest(name: string, limit?: number): readonly string[] {
    if (typeof name !== 'string') invalid(`catalog.closest: name must be a string (got ${name === null ? 'null' : typeof name})`)
    const max = readLimit(limit, DEFAULT_CLOSEST_LIMIT, 'catalog.closest')
    return rankClosest(name, names, foldedNames, nameTerms, max)
  }

  return Object.freeze({ size: docs.length, search, closest })
}

// ── "did you mean" ──────────────────────────────────────────────────────────

/** Below this similarity (the mean of spelling and word overlap, 0-1) a name is not offered. */
const MIN_SIMILARITY = 0.5
/** Below this spelling similarity, edit distance stops counting (and stops being computed). */
const MIN_SPELLING = 0.25
/** A name spelled this close is a suggestion even when it shares no word (typos in every word). */
const TYPO_SIMILARITY = 0.8
/** Names longer than this are compared on their first characters only (bounded work). */
const MAX_EDIT_LENGTH = 128

/** Three scratch rows for {@link editDistance}, each at least one longer than any compared name. */
type EditRows = [Int32Array, Int32Array, Int32Array]

/**
 * Optimal string alignment distance (Levenshtein plus adjacent transpositions) over UTF-16 code
 * units, in three rolling rows.
 */
function editDistance(a: string, b: string, bound: number, rows: EditRows): number {
  if (Math.abs(a.length - b.length) > bound) return bound + 1
  const width = b.length + 1
  let [before, previous, current] = rows
  for (let j = 0; j < width; j++) previous[j] = j
  for (let i = 1; i <= a.length; i++) {
    const ai = a.charCodeAt(i - 1)
    current[0] = i
    let rowMin = i
    for (let j = 1; j < width; j++) {
      const bj = b.charCodeAt(j - 1)
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (ai === bj ? 0 : 1))
      if (i > 1 && j > 1 && ai === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === bj) value = Math.min(value, before[j - 2]! + 1)
      current[j] = value
      if (value < rowMin) rowMin = value
    }
    if (rowMin > bound) return bound + 1
    ;[before, previous, current] = [previous, current, before]
  }
  return previous[b.length]!
}

/** Share of the wanted terms (each with its expansions) found among `terms`, a synonym counting at its weight. */
function termOverlap(wanted: readonly (readonly (readonly [string, number])[])[], terms: ReadonlySet<string>): number {
  if (wanted.length === 0 || terms.size === 0) return 0
  let found = 0
  for (const expansions of wanted) {
    for (const [candidate, weight] of expansions) {
      if (terms.has(candidate)) {
        found += weight
        break
      }
    }
  }
  // Dice-like: extra words on either side lower the overlap.
  return (2 * found) / (wanted.length + terms.size)
}

function rankClosest(
  name: string,
  names: readonly string[],
  folded: readonly string[],
  nameTerms: readonly ReadonlySet<string>[],
  limit: number,
): string[] {
  const wanted = name.toLowerCase().slice(0, MAX_EDIT_LENGTH)
  const wantedTerms = [...new Set(analyze(name.slice(0, MAX_EDIT_LENGTH)))].map(expandTerm)
  const scored: { name: string; score: number }[] = []
  const width = MAX_EDIT_LENGTH + 1
  const rows: EditRows = [new Int32Array(width), new Int32Array(width), new Int32Array(width)]
  names.forEach((candidate, i) => {
    const other = folded[i]!
    const longest = Math.max(wanted.length, other.length, 1)
    const words = termOverlap(wantedTerms, nameTerms[i]!)
    // The least spelling similarity that could still make this name a suggestion: the
    // edit distance is only computed that far, so a name sharing no word with the
    // wanted one costs a few cells, not a full table. Beyond it, spelling counts 0.
    const needed = Math.min(TYPO_SIMILARITY, Math.max(MIN_SPELLING, 2 * MIN_SIMILARITY - words))
    const bound = Math.floor(longest * (1 - needed))
    const distance = editDistance(wanted, other, bound, rows)
    const spelling = distance > bound ? 0 : 1 - distance / longest
    const score = round((spelling + words) / 2)
    if (score >= MIN_SIMILARITY || spelling >= TYPO_SIMILARITY) scored.push({ name: candidate, score })
  })
  scored.sort((a, b) => b.score - a.score || byCodePoint(a.name, b.name))
  return scored.slice(0, limit).map((s) => s.name)
}
