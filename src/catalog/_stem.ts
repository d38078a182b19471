/**
 * A light English stemmer for tool names, descriptions and the queries a model writes.
 * @module
 */

/**
 * Forms the suffix rules cannot reach (irregular verbs and plurals, and a few derivations that mean
 * the same action), each mapped to the base word.
 */
const IRREGULAR: Readonly<Record<string, string>> = {
  gave: 'give', given: 'give', made: 'make', sent: 'send', found: 'find', took: 'take', taken: 'take',
  got: 'get', gotten: 'get', ran: 'run', wrote: 'write', written: 'write', shown: 'show', chose: 'choose',
  chosen: 'choose', froze: 'freeze', frozen: 'freeze', began: 'begin', begun: 'begin', paid: 'pay',
  spent: 'spend', sold: 'sell', bought: 'buy', kept: 'keep', left: 'leave', lost: 'lose', built: 'build',
  rebuilt: 'rebuild', undone: 'undo', did: 'do', done: 'do', brought: 'bring', went: 'go', gone: 'go',
  saw: 'see', seen: 'see', hid: 'hide', hidden: 'hide', broke: 'break', broken: 'break', held: 'hold',
  told: 'tell', said: 'say', knew: 'know', known: 'know', threw: 'throw', thrown: 'throw', drew: 'draw',
  drawn: 'draw', forgot: 'forget', forgotten: 'forget', withdrew: 'withdraw', withdrawn: 'withdraw',
  shook: 'shake', woke: 'wake', led: 'lead', fed: 'feed', met: 'meet', sought: 'seek', taught: 'teach',
  thought: 'think', understood: 'understand', wore: 'wear', worn: 'wear', ate: 'eat', eaten: 'eat',
  used: 'use', using: 'use', uses: 'use', embedded: 'embed', embedding: 'embed', embeds: 'embed',
  children: 'child', people: 'person', men: 'man', women: 'woman', indices: 'index', analyses: 'analysis',
  criteria: 'criterion', aliases: 'alias', statuses: 'status', mice: 'mouse', feet: 'foot', teeth: 'tooth',
  deletion: 'delete', creation: 'create', cancellation: 'cancel', restoration: 'restore', removal: 'remove',
  modification: 'modify', assignment: 'assign', deployment: 'deploy', deployments: 'deploy', installation: 'install',
  registration: 'register', invitation: 'invite', configuration: 'config',
  shipment: 'ship', shipments: 'ship', shipping: 'ship', settings: 'settings', setting: 'settings',
  slowest: 'slow', fastest: 'fast', newest: 'new', oldest: 'old', largest: 'large', biggest: 'big',
  smallest: 'small', highest: 'high', lowest: 'low', longest: 'long', shortest: 'short', cheapest: 'cheap',
  busiest: 'busy', earliest: 'early', best: 'good', worst: 'bad',
  hourly: 'hour', nightly: 'night', daily: 'day', weekly: 'week', monthly: 'month', yearly: 'year', annual: 'year',
  annually: 'year', quarterly: 'quarter', availability: 'available', unavailable: 'available', retention: 'retain',
  growth: 'grow',
}

/** Words whose final `s` is not a plural (or which the rules would otherwise mangle). */
const KEEP = new Set([
  'alias', 'atlas', 'bias', 'canvas', 'gas', 'has', 'was', 'this', 'its', 'news', 'series', 'species', 'always',
  'perhaps', 'status', 'analysis', 'basis', 'axis', 'thesis', 'chaos', 'dns', 'https', 'aws', 'gcs', 'sms', 'cors',
  'kubernetes', 'yes', 'plus', 'bonus', 'campus', 'census', 'corpus', 'focus', 'virus', 'sinus', 'nexus', 'cactus',
])

const VOWEL = /[aeiouy]/
const ASCII_WORD = /^[a-z]+$/

function strip(word: string, suffix: string, min: number): string | undefined {
  if (!word.endsWith(suffix)) return undefined
  const rest = word.slice(0, -suffix.length)
  return rest.length >= min && VOWEL.test(rest) ? rest : undefined
}

function undouble(word: string): string {
  const last = word[word.length - 1]
  if (word.length >= 4 && last === word[word.length - 2] && !'aeiouylszf'.includes(last!)) return word.slice(0, -1)
  return word
}

/** The suffix step: at most one of -ies/-ied, -sses, -s, -ing, -ed. */
function stripInflection(word: string): string {
  if (word.length > 4 && (word.endsWith('ies') || word.endsWith('ied'))) return `${word.slice(0, -3)}i`
  if (word.endsWith('sses')) return word.slice(0, -2)
  if (word.endsWith('s') && !/(ss|us|is)$/.test(word)) return word.slice(0, -1)
  const ing = strip(word, 'ing', 3)
  if (ing !== undefined) return undouble(ing)
  if (!word.endsWith('eed')) {
    const ed = strip(word, 'ed', 3)
    if (ed !== undefined) return undouble(ed)
  }
  return word
}

/**
 * The stem of one lower-case word.
 * @example
 * ```ts
 * stem('invoices') // 'invoic' (as is stem('invoice'))
 * ```
 */
export function stem(word: string): string {
  let w = IRREGULAR[word] ?? word
  if (!ASCII_WORD.test(w) || KEEP.has(w)) return w
  // Plurals of two-letter abbreviations (ids, vms, ips, prs) are the only short forms folded.
  if (w.length <= 3) return w.length === 3 && w.endsWith('s') && !/(ss|us|is)$/.test(w) ? w.slice(0, 2) : w
  w = stripInflection(w)
  // A final e (change → chang) and a final consonant-y (company → compani) are folded
  // after the suffix step, so the base form meets its inflections (changed → chang,
  // companies → compani) without knowing which verbs drop their e.
  if (w.length > 3 && w.endsWith('e') && !w.endsWith('ee')) w = w.slice(0, -1)
  if (w.length > 3 && w.endsWith('y') && !VOWEL.test(w[w.length - 2]!)) w = `${w.slice(0, -1)}i`
  return w
}
