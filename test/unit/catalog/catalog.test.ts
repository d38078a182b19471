import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createCatalog, DEFAULT_SEARCH_LIMIT, type CatalogEntry } from '../../../src/catalog/index.js'
import { CORPUS } from './corpus.js'
import { shuffled } from './shuffle.js'

const catalog = createCatalog(CORPUS)
const names = (query: string, limit = 3): string[] => catalog.search(query, { limit }).map((h) => h.name)

function expectInvalidOptions(fn: () => unknown, message: RegExp): void {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    expect((error as ToolError).code).toBe('INVALID_OPTIONS')
    expect((error as ToolError).message).toMatch(message)
    return
  }
  throw new Error('expected a ToolError')
}

describe('createCatalog: ranking on a fixed corpus', () => {
  it('bridges the phrasing of a need and the name of a tool (exact order)', () => {
    expect(names('remove the staging bucket')).toEqual(['storage_delete_bucket', 'storage_create_bucket', 'storage_list_buckets'])
    expect(names('download all invoices as csv')).toEqual(['billing_export_invoices', 'billing_get_invoice_pdf', 'billing_list_invoices'])
    expect(names('give alice the admin role')).toEqual(['iam_assign_role', 'iam_revoke_role'])
    expect(names("bring back yesterday's snapshot")).toEqual(['backup_restore_snapshot', 'backup_list_snapshots'])
    expect(names('how many open tickets does a customer have')).toEqual(['support_count_tickets', 'support_list_tickets', 'billing_list_invoices'])
    expect(names('take away a role')).toEqual(['iam_revoke_role', 'iam_assign_role'])
  })

  it('prefers the exact word over a synonym', () => {
    expect(names('list invoices', 1)).toEqual(['billing_list_invoices'])
    expect(names('export invoices', 1)).toEqual(['billing_export_invoices'])
  })

  it('matches camelCase names', () => {
    expect(names('orders', 2).sort()).toEqual(['getOrder', 'listOrders'])
    expect(names('list the orders', 1)).toEqual(['listOrders'])
  })

  it('breaks score ties by name in code point order', () => {
    const hits = catalog.search('invoice')
    const tied = hits.filter((h) => h.score === hits[1]!.score)
    expect(tied.map((h) => h.name)).toEqual(['billing_export_invoices', 'billing_list_invoices'])
    for (let i = 1; i < hits.length; i++) {
      const [a, b] = [hits[i - 1]!, hits[i]!]
      expect(a.score > b.score || (a.score === b.score && a.name < b.name)).toBe(true)
    }
  })

  it('returns positive scores rounded to 6 decimals, best first, and frozen hits', () => {
    const hits = catalog.search('delete bucket')
    expect(hits.length).toBeGreaterThan(0)
    for (const hit of hits) {
      expect(hit.score).toBeGreaterThan(0)
      expect(Math.round(hit.score * 1e6) / 1e6).toBe(hit.score)
      expect(Object.isFrozen(hit)).toBe(true)
    }
  })

  it('honours limit, with a default of 10', () => {
    const many: CatalogEntry[] = Array.from({ length: 30 }, (_, i) => ({ name: `tool_${String(i).padStart(2, '0')}`, description: 'Delete a thing.' }))
    const big = createCatalog(many)
    expect(big.search('delete')).toHaveLength(DEFAULT_SEARCH_LIMIT)
    expect(big.search('delete', { limit: 1 }).map((h) => h.name)).toEqual(['tool_00'])
    expect(big.search('delete', { limit: 100 })).toHaveLength(30)
    expect(big.search('delete', { limit: 100 }).map((h) => h.name)).toEqual(many.map((e) => e.name))
    expect(big.size).toBe(30)
  })

  it('indexes nested parameter names, enum values and descriptions', () => {
    const nested = createCatalog([
      {
        name: 'a',
        description: 'First.',
        parameters: { type: 'object', properties: { filter: { type: 'object', properties: { colour: { type: 'string', enum: ['turquoise'] } } } } },
      },
      { name: 'b', description: 'Second.', parameters: { type: 'object', properties: { items: { type: 'array', items: { type: 'object', properties: { sku: { type: 'string', description: 'Stock keeping unit of the gizmo.' } } } } } } },
      { name: 'c', description: 'Third.', parameters: { type: 'object', properties: { mode: { oneOf: [{ const: 'sepia' }, { type: 'null' }] } } } },
    ])
    expect(nested.search('turquoise colour').map((h) => h.name)).toEqual(['a'])
    expect(nested.search('gizmo').map((h) => h.name)).toEqual(['b'])
    expect(nested.search('sepia').map((h) => h.name)).toEqual(['c'])
  })
})

describe('createCatalog: determinism', () => {
  const queries = ['remove the staging bucket', 'invoice', 'list', 'role', 'how many tickets', 'orders', 'zzz']

  it('gives the same results whatever the order of the entries', () => {
    const expected = queries.map((q) => catalog.search(q, { limit: 20 }))
    for (const seed of [1, 2, 3, 4, 5]) {
      const other = createCatalog(shuffled(CORPUS, seed))
      expect(queries.map((q) => other.search(q, { limit: 20 }))).toEqual(expected)
      expect(other.closest('storage_remove_bucket')).toEqual(catalog.closest('storage_remove_bucket'))
    }
  })

  it('gives the same results on every call (the scratch buffers are reset)', () => {
    const first = queries.map((q) => catalog.search(q))
    for (let i = 0; i < 3; i++) expect(queries.map((q) => catalog.search(q))).toEqual(first)
  })
})

describe('createCatalog: empty and odd queries', () => {
  it('returns [] for an empty, blank, stopword-only or symbol-only query', () => {
    for (const q of ['', '   ', 'the of and to a', 'please can you', '?!', '🙂🚀']) expect(catalog.search(q)).toEqual([])
  })

  it('treats regex metacharacters as separators', () => {
    expect(names('.*bucket+?(delete)[$^]|\\')).toEqual(names('delete bucket'))
    expect(catalog.search('(((((')).toEqual([])
  })

  it('handles unicode queries', () => {
    // Case and diacritics fold away, emoji are separators.
    expect(names('DÉLÉTE the BÜCKET', 1)).toEqual(['storage_delete_bucket'])
    expect(names('Delete the Bucket ✨', 1)).toEqual(['storage_delete_bucket'])
    expect(catalog.search('日本語のクエリ')).toEqual([])
    const unicode = createCatalog([{ name: 'übersetzen', description: 'Übersetzt einen Text ins Französische.' }, { name: 'other', description: 'Something else.' }])
    expect(unicode.search('ubersetzen').map((h) => h.name)).toEqual(['übersetzen'])
    expect(unicode.search('französische').map((h) => h.name)).toEqual(['übersetzen'])
  })

  it('answers a 10 KB query quickly and sensibly', () => {
    const query = 'delete bucket '.repeat(800).slice(0, 10_240)
    expect(query.length).toBe(10_240)
    const start = performance.now()
    expect(names(query, 1)).toEqual(['storage_delete_bucket'])
    expect(performance.now() - start).toBeLessThan(1_000) // a bound, not a speed target: the margin absorbs machine load (bench:catalog prints the figure)
    const letters = (n: number): string => (n < 26 ? '' : letters(Math.floor(n / 26) - 1)) + String.fromCharCode(97 + (n % 26))
    const noise = Array.from({ length: 2_000 }, (_, i) => `zq${letters(i)}`).join(' ')
    expect(catalog.search(noise)).toEqual([])
  })
})

describe('createCatalog: validation', () => {
  it('rejects malformed entries with INVALID_OPTIONS', () => {
    expectInvalidOptions(() => createCatalog(null as never), /entries must be an array/)
    expectInvalidOptions(() => createCatalog([null] as never), /entries\[0\] must be an object/)
    // eslint-disable-next-line no-sparse-arrays
    expectInvalidOptions(() => createCatalog([, { name: 'a', description: '' }] as never), /entries\[0\] must be an object/)
    expectInvalidOptions(() => createCatalog([{ name: '', description: '' }]), /name must be a non-empty string/)
    expectInvalidOptions(() => createCatalog([{ name: 'a', description: 1 }] as never), /"a".*description must be a string/)
    expectInvalidOptions(() => createCatalog([{ name: 'a', description: '', parameters: [] }]), /parameters must be a JSON Schema object/)
    expectInvalidOptions(() => createCatalog([{ name: 'a', description: '' }, { name: 'a', description: '' }]), /duplicate tool name "a"/)
  })

  it('rejects a bad query, options or limit with INVALID_OPTIONS', () => {
    expectInvalidOptions(() => catalog.search(undefined as never), /query must be a string \(got undefined\)/)
    expectInvalidOptions(() => catalog.search(null as never), /query must be a string \(got null\)/)
    expectInvalidOptions(() => catalog.search('x', 5 as never), /options must be an object/)
    for (const limit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3']) {
      expectInvalidOptions(() => catalog.search('x', { limit: limit as number }), /limit must be a positive integer/)
      expectInvalidOptions(() => catalog.closest('x', limit as number), /limit must be a positive integer/)
    }
    expectInvalidOptions(() => catalog.closest(42 as never), /name must be a string/)
  })

  it('accepts an empty catalog', () => {
    const empty = createCatalog([])
    expect(empty.size).toBe(0)
    expect(empty.search('anything')).toEqual([])
    expect(empty.closest('anything')).toEqual([])
  })

  it('walks a very deep parameter schema without recursion', () => {
    let schema: Record<string, unknown> = { type: 'string', description: 'bottom' }
    for (let i = 0; i < 100_000; i++) schema = { type: 'object', properties: { nested: schema } }
    expect(() => createCatalog([{ name: 'deep', description: 'Deep schema.', parameters: schema }])).not.toThrow()
  })
})

describe('closest: did you mean', () => {
  it('suggests by spelling (typos, case, separators)', () => {
    expect(catalog.closest('storage_delte_bucket', 1)).toEqual(['storage_delete_bucket'])
    expect(catalog.closest('STORAGE_DELETE_BUCKET', 1)).toEqual(['storage_delete_bucket'])
    expect(catalog.closest('list_orders', 1)).toEqual(['listOrders'])
    expect(catalog.closest('billing_list_invoice', 1)).toEqual(['billing_list_invoices'])
    // A typo in every word: no shared word, but close spelling.
    expect(catalog.closest('strage_delte_bukcet', 1)).toEqual(['storage_delete_bucket'])
  })

  it('suggests by shared words, synonyms included', () => {
    expect(catalog.closest('storage_remove_bucket', 1)).toEqual(['storage_delete_bucket'])
    expect(catalog.closest('iam_give_role', 1)).toEqual(['iam_assign_role'])
    expect(catalog.closest('remove_bucket', 1)).toEqual(['storage_delete_bucket'])
  })

  it('returns up to 3 names by default, best first, and [] when nothing is close', () => {
    expect(catalog.closest('storage_remove_bucket')).toEqual(['storage_delete_bucket', 'storage_create_bucket', 'storage_list_buckets'])
    expect(catalog.closest('xyz')).toEqual([])
    expect(catalog.closest('')).toEqual([])
    expect(catalog.closest('weather_forecast_tomorrow')).toEqual([])
  })

  it('stays bounded for a very long name', () => {
    const start = performance.now()
    expect(catalog.closest('x'.repeat(100_000))).toEqual([])
    expect(performance.now() - start).toBeLessThan(1_000) // a bound, not a speed target: the margin absorbs machine load (bench:catalog prints the figure)
  })
})
