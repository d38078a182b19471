import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { renderCatalogIndex, type CatalogIndexTool } from '../../../src/catalog/index.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { shuffled } from './shuffle.js'

const SMALL: readonly CatalogIndexTool[] = [
  { name: 'github_create_issue' },
  { name: 'github_list_issues' },
  { name: 'github_merge_pull_request' },
  { name: 'github_get_pull_request' },
  { name: 'stripe.refunds.create' },
  { name: 'stripe.charges.list' },
  { name: 'read_file' },
  { name: 'write_file' },
  { name: 'search', group: 'everything' },
  { name: 'echo', group: 'everything' },
]

const HEADING = [
  '## Tool catalog',
  '',
  '10 tools in 4 namespaces: too many to declare here, but every one is callable as `await tools.<name>(args)`. Find the ones you need from inside your program:',
  '- `await catalog.search(query, { limit: 5 })` → `[{ name, description, declaration }]`, best match first; `query` is plain words ("refund an order", "count open tickets").',
  "- `await catalog.describe(name)` → the TypeScript declaration of that tool's arguments and output.",
  '',
]

const BIG = LARGE_REGISTRY.map(({ name }) => ({ name }))

function expectInvalidOptions(fn: () => unknown, message: RegExp): void {
  expect(fn).toThrow(message)
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    expect((error as ToolError).code).toBe('INVALID_OPTIONS')
  }
}

describe('renderCatalogIndex: the format', () => {
  it('renders the index form: namespaces with counts, subjects and tool names (exact text)', () => {
    const result = renderCatalogIndex(SMALL, { maxChars: 2_000 })
    expect(result.form).toBe('index')
    expect(result.listedTools).toBe(10)
    expect(result.fits).toBe(true)
    expect(result.text).toBe(
      [
        ...HEADING,
        'Namespaces (tool count: main subjects — some of their tools):',
        '- everything (2: echo) — echo, search',
        '- github_* (4: issue, pull request) — github_create_issue, github_get_pull_request, github_list_issues, github_merge_pull_request',
        '- stripe.* (2: charges, refunds) — stripe.charges.list, stripe.refunds.create',
        '- other tools (2: file) — read_file, write_file',
      ].join('\n'),
    )
  })

  it('falls back to namespaces only when not one name per namespace fits (exact text)', () => {
    const result = renderCatalogIndex(SMALL, { maxChars: 700 })
    expect(result).toEqual({
      form: 'namespaces',
      listedTools: 0,
      fits: true,
      text: [
        ...HEADING,
        'Namespaces (tool count: main subjects):',
        '- everything (2: echo)',
        '- github_* (4: issue, pull request)',
        '- stripe.* (2: charges, refunds)',
        '- other tools (2: file)',
      ].join('\n'),
    })
  })

  it('writes the discovery instructions for Python on request', () => {
    const { text } = renderCatalogIndex(SMALL, { maxChars: 2_000, language: 'python' })
    expect(text).toContain('`await catalog.search(query, {"limit": 5})`')
    expect(text).toContain('the Python declaration')
    expect(text).not.toContain('TypeScript')
  })

  it('formats counts the same in every runtime (no locale)', () => {
    const { text } = renderCatalogIndex(BIG, { maxChars: 6_000 })
    expect(text).toContain('1,000 tools in 20 namespaces')
  })
})

describe('renderCatalogIndex: namespaces', () => {
  it('takes a shared name prefix as a namespace, a caller group key over it, and never a leading verb', () => {
    const { text } = renderCatalogIndex(
      [
        { name: 'crm_get_contact' },
        { name: 'crm_list_contacts' },
        { name: 'crm_a', group: 'imported' },
        { name: 'list_orders' },
        { name: 'list_users' },
        { name: 'lonely_tool' },
      ],
      { maxChars: 5_000 },
    )
    expect(text).toContain('- crm_* (2: contact) — crm_get_contact, crm_list_contacts')
    expect(text).toContain('- imported (1: crm a) — crm_a')
    expect(text).toContain('- other tools (3: lonely tool, orders, users) — list_orders, list_users, lonely_tool')
    expect(text).not.toContain('list_*')
  })

  it('puts every tool in one group when there are no namespaces (and keeps a prefix all tools share)', () => {
    const result = renderCatalogIndex([{ name: 'read_file' }, { name: 'write_file' }, { name: 'bash' }], { maxChars: 5_000 })
    expect(result.text).toContain('3 tools: too many to declare here')
    expect(result.text).toContain('- tools (3: file, bash) — bash, read_file, write_file')
    const single = renderCatalogIndex([{ name: 'stripe_a' }, { name: 'stripe_b' }], { maxChars: 5_000 })
    expect(single.text).toContain('2 tools: too many to declare here')
    expect(single.text).toContain('- stripe_* (2: a, b) — stripe_a, stripe_b')
  })

  it('names one subject after another, so a few names show each namespace’s range', () => {
    const result = renderCatalogIndex(BIG, { maxChars: 6_000 })
    expect(result.text).toContain('- billing_* (58: invoice, subscription, payment, coupon, payment method) — billing_get_coupon,')
    const repo = result.text.split('\n').find((line) => line.startsWith('- repo_*'))!
    for (const name of ['repo_get_pull_request', 'repo_get_repository', 'repo_get_issue', 'repo_get_branch']) expect(repo).toContain(name)
  })
})

describe('renderCatalogIndex: the budget', () => {
  it('at 1,000 tools: the index form within the budget, one name per namespace at least', () => {
    const result = renderCatalogIndex(BIG, { maxChars: 6_000 })
    expect(result.form).toBe('index')
    expect(result.fits).toBe(true)
    expect(result.text.length).toBeLessThanOrEqual(6_000)
    expect(result.text.length).toBeGreaterThan(5_800)
    const lines = result.text.split('\n').filter((line) => line.startsWith('- ') && line.includes(' — '))
    expect(lines).toHaveLength(20)
    const listed = BIG.filter(({ name }) => new RegExp(`[ ,]${name}(,|$)`, 'm').test(result.text))
    expect(listed.length).toBe(result.listedTools)
    expect(result.listedTools).toBeGreaterThan(100)
  })

  it('lists more names as the budget grows, and every name once the budget allows', () => {
    let previous = -1
    for (const maxChars of [3_000, 4_000, 8_000, 16_000, 32_000]) {
      const result = renderCatalogIndex(BIG, { maxChars })
      expect(result.text.length).toBeLessThanOrEqual(maxChars)
      expect(result.listedTools).toBeGreaterThanOrEqual(previous)
      previous = result.listedTools
    }
    const all = renderCatalogIndex(BIG, { maxChars: 40_000 })
    expect(all.listedTools).toBe(1_000)
    expect(all.text).not.toContain(' more')
  })

  it('switches to namespaces only when the names do not fit, and folds the smallest namespaces last', () => {
    const namespaces = renderCatalogIndex(BIG, { maxChars: 2_500 })
    expect(namespaces.form).toBe('namespaces')
    expect(namespaces.listedTools).toBe(0)
    expect(namespaces.fits).toBe(true)
    expect(namespaces.text.length).toBeLessThanOrEqual(2_500)
    for (const { name } of BIG) expect(namespaces.text).not.toContain(name)
    expect(namespaces.text).toContain('- billing_* (58: invoice, subscription, payment, coupon, payment method)')

    const folded = renderCatalogIndex(BIG, { maxChars: 1_200 })
    expect(folded.form).toBe('namespaces')
    expect(folded.fits).toBe(true)
    expect(folded.text.length).toBeLessThanOrEqual(1_200)
    expect(folded.text).toMatch(/\n- \d+ more namespaces \([\d,]+ tools\): use catalog\.search$/)
    // The largest namespaces are the ones kept.
    expect(folded.text).toContain('- billing_* (58')
    expect(folded.text).not.toContain('- messaging_* (41')
  })

  it('says when even the heading does not fit', () => {
    const result = renderCatalogIndex(BIG, { maxChars: 100 })
    expect(result.form).toBe('namespaces')
    expect(result.fits).toBe(false)
    expect(result.text).toContain('20 more namespaces (1,000 tools): use catalog.search')
  })
})

describe('renderCatalogIndex: byte stability', () => {
  it('renders the same bytes for the same tools, whatever their order', () => {
    for (const maxChars of [1_200, 2_500, 6_000]) {
      const expected = renderCatalogIndex(BIG, { maxChars })
      for (const seed of [7, 8, 9]) expect(renderCatalogIndex(shuffled(BIG, seed), { maxChars })).toEqual(expected)
      expect(renderCatalogIndex(BIG, { maxChars })).toEqual(expected)
    }
    expect(renderCatalogIndex(shuffled(SMALL, 3), { maxChars: 2_000 })).toEqual(renderCatalogIndex(SMALL, { maxChars: 2_000 }))
  })

  it('ignores fields it does not use (a description)', () => {
    const described = LARGE_REGISTRY.map(({ name, description }) => ({ name, description }))
    expect(renderCatalogIndex(described, { maxChars: 6_000 })).toEqual(renderCatalogIndex(BIG, { maxChars: 6_000 }))
  })
})

describe('renderCatalogIndex: validation', () => {
  it('rejects malformed tools and options with INVALID_OPTIONS', () => {
    expectInvalidOptions(() => renderCatalogIndex(null as never, { maxChars: 10 }), /tools must be an array/)
    expectInvalidOptions(() => renderCatalogIndex([1] as never, { maxChars: 10 }), /tools\[0\] must be an object/)
    // eslint-disable-next-line no-sparse-arrays
    expectInvalidOptions(() => renderCatalogIndex([{ name: 'a' }, , { name: 'b' }] as never, { maxChars: 10 }), /tools\[1\] must be an object/)
    expectInvalidOptions(() => renderCatalogIndex([{ name: '' }], { maxChars: 10 }), /tools\[0\]\.name must be a non-empty string/)
    expectInvalidOptions(() => renderCatalogIndex([{ name: 'a', group: '' }], { maxChars: 10 }), /group must be a non-empty string/)
    expectInvalidOptions(() => renderCatalogIndex([{ name: 'a' }, { name: 'a' }], { maxChars: 10 }), /duplicate tool name "a"/)
    expectInvalidOptions(() => renderCatalogIndex([], undefined as never), /options \{ maxChars \} are required/)
    for (const maxChars of [0, -5, 1.5, Number.NaN, '100']) {
      expectInvalidOptions(() => renderCatalogIndex([], { maxChars: maxChars as number }), /maxChars must be a positive integer/)
    }
    expectInvalidOptions(() => renderCatalogIndex([], { maxChars: 10, language: 'ruby' as never }), /language must be 'typescript' or 'python'/)
  })

  it('renders an empty tool set without failing', () => {
    const result = renderCatalogIndex([], { maxChars: 2_000 })
    expect(result.form).toBe('namespaces')
    expect(result.listedTools).toBe(0)
    expect(result.text).toContain('0 tools')
  })
})
