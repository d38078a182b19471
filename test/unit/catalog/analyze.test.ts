import { describe, expect, it } from 'vitest'
import { analyze, expandTerm, splitWords } from '../../../src/catalog/_analyze.js'
import { stem } from '../../../src/catalog/_stem.js'
import { PHRASES, STOPWORDS, SYNONYM_GROUPS } from '../../../src/catalog/_vocabulary.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'

describe('splitWords', () => {
  it('splits names on separators, camelCase humps, acronyms and digit boundaries', () => {
    expect(splitWords('billing_list_invoices')).toEqual(['billing', 'list', 'invoices'])
    expect(splitWords('stripe.refunds.create')).toEqual(['stripe', 'refunds', 'create'])
    expect(splitWords('mcp-server/get:item')).toEqual(['mcp', 'server', 'get', 'item'])
    expect(splitWords('listInvoices')).toEqual(['list', 'invoices'])
    expect(splitWords('getHTTPServerStatus')).toEqual(['get', 'http', 'server', 'status'])
    expect(splitWords('ec2_v2Instances')).toEqual(['ec', '2', 'v', '2', 'instances'])
  })

  it('folds case and diacritics, keeps non-Latin letters whole', () => {
    expect(splitWords('Café ÜBER naïve')).toEqual(['cafe', 'uber', 'naive'])
    expect(splitWords('日本語のツール')).toEqual(['日本語のツール'])
    expect(splitWords('ＦＵＬＬ width')).toEqual(['full', 'width'])
  })

  it('splits ASCII text (its fast path) exactly as the Unicode path does', () => {
    const samples = [
      ...LARGE_REGISTRY.flatMap((t) => [t.name, t.description, JSON.stringify(t.parameters)]),
      'getHTTPServer2FA_listInvoices-v2 ABCdef aB1c2D XMLHttpRequest iOS17 ipv6Address',
      '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~ \t\n\x00\x7f',
    ]
    // A trailing non-ASCII word forces the Unicode path for the same text.
    for (const text of samples) expect(splitWords(`${text} é`)).toEqual([...splitWords(text), 'e'])
  })

  it('treats anything that is not a letter or a digit as a separator', () => {
    expect(splitWords('.*+?^${}()|[]\\ a(b)c')).toEqual(['a', 'b', 'c'])
    expect(splitWords('')).toEqual([])
    expect(splitWords('🙂 🚀')).toEqual([])
  })
})

describe('stem', () => {
  it.each([
    ['changed', 'change'],
    ['changes', 'change'],
    ['changing', 'change'],
    ['invoices', 'invoice'],
    ['listing', 'list'],
    ['listed', 'list'],
    ['companies', 'company'],
    ['policies', 'policy'],
    ['copied', 'copy'],
    ['stopped', 'stop'],
    ['shipping', 'ship'],
    ['addresses', 'address'],
    ['statuses', 'status'],
    ['keys', 'key'],
    ['deploying', 'deploy'],
    ['ids', 'id'],
    ['vms', 'vm'],
    ['gave', 'give'],
    ['brought', 'bring'],
    ['sent', 'send'],
    ['paid', 'pay'],
    ['children', 'child'],
    ['deletion', 'delete'],
    ['slowest', 'slow'],
    ['monthly', 'month'],
  ])('%s meets %s', (inflected, base) => {
    expect(stem(inflected)).toBe(stem(base))
  })

  it('keeps apart words that only look inflected', () => {
    expect(stem('status')).toBe('status')
    expect(stem('access')).toBe('access')
    expect(stem('analysis')).toBe('analysis')
    expect(stem('need')).toBe('need')
    expect(stem('string')).toBe('string')
    expect(stem('add')).toBe(stem('added'))
    expect(stem('bill')).toBe(stem('billing'))
    expect(stem('set')).not.toBe(stem('settings'))
  })

  it('leaves short and non-ASCII words alone', () => {
    expect(stem('get')).toBe('get')
    expect(stem('über')).toBe('über')
    expect(stem('日本')).toBe('日本')
  })
})

describe('analyze', () => {
  it('stems, drops stopwords and single letters, keeps repeats', () => {
    expect(analyze('List all the invoices of a customer, invoices only')).toEqual(['list', stem('invoice'), stem('customer'), stem('invoice')])
    expect(analyze("yesterday's snapshot")).toEqual(['yesterday', 'snapshot'])
    expect(analyze('restore s3 object')).toEqual([stem('restore'), '3', 'object'])
  })

  it('folds phrases into one term, multi-word phrases included', () => {
    expect(analyze('how many open tickets')).toEqual(['count', 'open', stem('ticket')])
    expect(analyze('the number of users')).toEqual(['count', 'user'])
    expect(analyze("bring back yesterday's snapshot")).toEqual([stem('restore'), 'yesterday', 'snapshot'])
    expect(analyze('get rid of the bucket')).toEqual([stem('delete'), 'bucket'])
    expect(analyze('who is on-call')).toEqual(['oncall'])
    expect(analyze('turn off 2FA')).toEqual([stem('disable'), 'mfa'])
  })

  it('matches a phrase split by a few words before its particle', () => {
    expect(analyze('bring the snapshot back')).toEqual([stem('restore'), 'snapshot'])
    expect(analyze('sign a user out')).toEqual(['logout', 'user'])
    expect(analyze('turn a lead into a customer')).toEqual(['convert', 'lead', stem('customer')])
    // Too far apart: the particle is just a stopword.
    expect(analyze('bring the very old and broken snapshot back')).toEqual(['bring', 'old', stem('break'), 'snapshot'])
  })

  it('returns [] for empty, stopword-only and symbol-only text', () => {
    expect(analyze('')).toEqual([])
    expect(analyze('the of and to a')).toEqual([])
    expect(analyze('?!… ()[]{}')).toEqual([])
  })
})

describe('expandTerm', () => {
  it('gives the term itself at weight 1 first, then its synonyms', () => {
    const remove = expandTerm(stem('remove'))
    expect(remove[0]).toEqual([stem('remove'), 1])
    expect(remove).toContainEqual([stem('delete'), 0.8])
    expect(remove).toContainEqual([stem('destroy'), 0.8])
  })

  it.each([
    ['remove', 'delete'],
    ['destroy', 'delete'],
    ['drop', 'delete'],
    ['count', 'tally'],
    ['download', 'export'],
    ['dump', 'export'],
    ['give', 'assign'],
    ['grant', 'assign'],
    ['restore', 'recover'],
    ['undo', 'restore'],
    ['find', 'search'],
    ['lookup', 'get'],
    ['fetch', 'get'],
    ['show', 'list'],
    ['add', 'create'],
    ['new', 'create'],
    ['make', 'create'],
    ['edit', 'update'],
    ['modify', 'update'],
    ['set', 'update'],
    ['email', 'send'],
    ['notify', 'send'],
    ['stop', 'cancel'],
    ['abort', 'cancel'],
  ])('%s reaches %s', (word, synonym) => {
    const terms = expandTerm(stem(word)).map(([t]) => t)
    expect(terms).toContain(stem(synonym))
  })

  it('has a deterministic order (weight, then term)', () => {
    const a = expandTerm(stem('get'))
    const sorted = [...a].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    expect(a).toEqual(sorted)
    expect(expandTerm('zzz-unknown')).toEqual([['zzz-unknown', 1]])
  })
})

describe('the vocabulary', () => {
  it('has no synonym word that analysis would drop or split', () => {
    for (const { words, weight } of SYNONYM_GROUPS) {
      expect(weight).toBeGreaterThan(0)
      expect(weight).toBeLessThan(1)
      for (const word of words) expect([word, analyze(word)]).toEqual([word, [stem(word)]])
    }
  })

  it('has phrases whose replacement is one or two terms and which are not stopwords', () => {
    const stop = new Set(STOPWORDS)
    for (const [phrase, replacement] of PHRASES) {
      expect(splitWords(phrase).length).toBeGreaterThanOrEqual(2)
      const terms = splitWords(replacement)
      expect([phrase, terms.length > 0 && terms.length <= 2 && terms.every((t) => !stop.has(t))]).toEqual([phrase, true])
    }
  })
})
