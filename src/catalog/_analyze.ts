/**
 * Text analysis shared by the catalog's index and its queries: the same steps run on a tool's name,
 * description and parameters as on what a model asks for, so both sides meet on the same terms.
 * @module
 */
import { stem } from './_stem.js'
import { PHRASES, STOPWORDS, SYNONYM_GROUPS } from './_vocabulary.js'

const ASCII = /^[\x00-\x7f]*$/

/**
 * Lower-case words of `text`: `billing_listInvoices-v2` → `billing list invoices v 2`.
 * Never throws; any string (empty, emoji, regex metacharacters) is fine.
 */
export function splitWords(text: string): string[] {
  // ASCII (the common case) has nothing to fold, and one ASCII pass costs a fraction of the Unicode
  // passes below.
  if (ASCII.test(text)) {
    return text.replace(/[a-z](?=[A-Z])|[A-Z](?=[A-Z][a-z])|[a-zA-Z](?=[0-9])|[0-9](?=[a-zA-Z])/g, '$& ').toLowerCase().match(/[a-z0-9]+/g) ?? []
  }
  const spaced = text
    .replace(/(?<=\p{Ll})(?=\p{Lu})/gu, ' ')
    .replace(/(?<=\p{Lu})(?=\p{Lu}\p{Ll})/gu, ' ')
    .replace(/(?<=\p{L})(?=\p{N})|(?<=\p{N})(?=\p{L})/gu, ' ')
  // Lower-case first: lower-casing can itself produce combining marks (İ → i̇).
  const folded = spaced.toLowerCase().normalize('NFKD').replace(/\p{M}+/gu, '')
  return folded.match(/[\p{L}\p{N}]+/gu) ?? []
}

const STOP = new Set(STOPWORDS)

/** Stems of words seen before: a tool set repeats a few thousand words many times. */
const stemCache = new Map<string, string>()
const MAX_CACHED_STEMS = 50_000

function cachedStem(word: string): string {
  let result = stemCache.get(word)
  if (result === undefined) {
    if (stemCache.size >= MAX_CACHED_STEMS) stemCache.clear()
    result = stem(word)
    stemCache.set(word, result)
  }
  return result
}

/** Particles after which a two-word phrase may be split by a few words ("turn it off"). */
const SEPARABLE_PARTICLES = new Set(['out', 'off', 'back', 'up', 'down', 'away', 'into'])
const MAX_PHRASE_GAP = 3

interface CompiledPhrase {
  readonly stems: readonly string[]
  readonly replacement: readonly string[]
  readonly separable: boolean
}

const PHRASE_TABLE: ReadonlyMap<string, readonly CompiledPhrase[]> = (() => {
  const table = new Map<string, CompiledPhrase[]>()
  for (const [phrase, replacement] of PHRASES) {
    const words = splitWords(phrase)
    const compiled: CompiledPhrase = {
      stems: words.map(stem),
      replacement: splitWords(replacement).map(stem),
      separable: words.length === 2 && SEPARABLE_PARTICLES.has(words[1]!),
    }
    const list = table.get(compiled.stems[0]!) ?? []
    list.push(compiled)
    table.set(compiled.stems[0]!, list)
  }
  for (const list of table.values()) list.sort((a, b) => b.stems.length - a.stems.length)
  return table
})()

/** Where a phrase starting at `i` ends: the index of its last word, or -1. */
function phraseEnd(phrase: CompiledPhrase, stems: readonly string[], i: number): number {
  const n = phrase.stems.length
  let contiguous = i + n <= stems.length
  for (let k = 1; contiguous && k < n; k++) contiguous = stems[i + k] === phrase.stems[k]
  if (contiguous) return i + n - 1
  if (!phrase.separable) return -1
  const last = Math.min(stems.length - 1, i + 1 + MAX_PHRASE_GAP)
  for (let j = i + 2; j <= last; j++) if (stems[j] === phrase.stems[1]) return j
  return -1
}

/**
 * The terms of `text`, in order, repeats kept (term frequency matters to the index).
 *
 * @example
 * ```ts
 * analyze('How many invoices were changed?') // ['count', 'invoic', 'chang']
 * ```
 */
export function analyze(text: string): string[] {
  const words = splitWords(text)
  const stems = words.map(cachedStem)
  const skip = new Set<number>()
  const out: string[] = []
  for (let i = 0; i < words.length; i++) {
    if (skip.has(i)) continue
    let matched = false
    for (const phrase of PHRASE_TABLE.get(stems[i]!) ?? []) {
      const end = phraseEnd(phrase, stems, i)
      if (end < 0) continue
      out.push(...phrase.replacement)
      // A contiguous phrase consumes its words.
      if (end === i + phrase.stems.length - 1) i = end
      else skip.add(end)
      matched = true
      break
    }
    if (matched) continue
    const word = words[i]!
    if (STOP.has(word) || (word.length === 1 && !/\d/.test(word))) continue
    out.push(stems[i]!)
  }
  return out
}

/** Stem → (synonym stem → weight), every group word stemmed the way index terms are. */
const SYNONYMS: ReadonlyMap<string, ReadonlyMap<string, number>> = (() => {
  const table = new Map<string, Map<string, number>>()
  for (const { weight, words } of SYNONYM_GROUPS) {
    const stems = [...new Set(words.map(stem))]
    for (const a of stems) {
      const row = table.get(a) ?? new Map<string, number>()
      for (const b of stems) if (b !== a && (row.get(b) ?? 0) < weight) row.set(b, weight)
      table.set(a, row)
    }
  }
  return table
})()

/**
 * The terms a query term may match, with their weights: itself at 1, its synonyms at their group's
 * weight.
 */
export function expandTerm(term: string): readonly (readonly [term: string, weight: number])[] {
  const row = SYNONYMS.get(term)
  const out: [string, number][] = [[term, 1]]
  if (row !== undefined) for (const entry of row) out.push(entry)
  return out.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
}

/** How many distinct terms the vocabulary knows synonyms for (for docs and the bench). */
export const SYNONYM_TERM_COUNT = SYNONYMS.size
