import { describe, expect, it } from 'vitest'
import { ToolArgsError, ToolError } from '../../../src/errors.js'
import { validateJsonSchemaValue } from '../../../src/schema/json-schema.js'
import { createDemoTools, createShopData } from '../../../demo/tools/index.js'
import { byName, call } from './helpers.js'

const fresh = () => createDemoTools({ include: ['shop'] })
type Page<K extends string, T> = { [key in K]: T[] } & { total: number; offset: number; nextOffset: number | null }
interface OrderV {
  id: string
  customerId: string
  status: string
  createdAt: string
  items: { productId: string; quantity: number; unitPriceCents: number }[]
  totalCents: number
}

describe('demo shop data', () => {
  it('is deterministic per seed and sized to make the point', () => {
    const a = createShopData()
    const b = createShopData()
    expect(JSON.stringify(a)).toBe(JSON.stringify(b))
    expect(JSON.stringify(createShopData({ seed: 7 }))).not.toBe(JSON.stringify(a))
    expect(a.customers).toHaveLength(60)
    expect(a.products).toHaveLength(40)
    expect(a.orders).toHaveLength(400)
    expect(JSON.stringify(a.orders).length).toBeGreaterThan(50_000)
    expect(new Set(a.products.map((p) => p.name)).size).toBe(40)
  })

  it('is internally consistent: references resolve, totals add up, orders sorted by date', () => {
    const data = createShopData()
    const customers = new Set(data.customers.map((c) => c.id))
    const products = new Map(data.products.map((p) => [p.id, p]))
    for (const order of data.orders) {
      expect(customers.has(order.customerId)).toBe(true)
      expect(order.items.length).toBeGreaterThan(0)
      for (const item of order.items) expect(products.get(item.productId)?.priceCents).toBe(item.unitPriceCents)
      expect(order.totalCents).toBe(order.items.reduce((s, i) => s + i.quantity * i.unitPriceCents, 0))
      expect(order.createdAt.startsWith('2024-')).toBe(true)
    }
    const dates = data.orders.map((o) => o.createdAt)
    expect(dates).toEqual([...dates].sort())
    expect(new Set(data.orders.map((o) => o.status)).size).toBe(6)
    expect(new Set(data.customers.map((c) => c.tier))).toEqual(new Set(['standard', 'gold', 'platinum']))
  })
})

describe('demo shop tools', () => {
  it('are all concurrency-safe and return schema-valid values', async () => {
    const { tools } = fresh()
    expect(tools.map((t) => t.name)).toEqual(['list_customers', 'get_customer', 'list_orders', 'get_order', 'get_product', 'search_products'])
    const calls: [string, unknown][] = [
      ['list_customers', { tier: 'gold' }],
      ['get_customer', { id: 'C001' }],
      ['list_orders', { status: 'shipped', limit: 100 }],
      ['get_order', { id: 'O0001' }],
      ['get_product', { id: 'P001' }],
      ['search_products', { category: 'audio' }],
    ]
    for (const [name, args] of calls) {
      const { value, tool, record } = await call(tools, name, args)
      expect(tool.isConcurrencySafe!(args)).toBe(true)
      expect(validateJsonSchemaValue(tool.output.schema, value), name).toEqual([])
      expect(JSON.parse((record.content[0] as { text: string }).text)).toEqual(value)
    }
  })

  it('list_orders filters by customer, status and date range, and pages', async () => {
    const { tools, shop } = fresh()
    const customerId = shop.orders[0]!.customerId
    const byCustomer = (await call(tools, 'list_orders', { customerId, limit: 100 })).value as Page<'orders', OrderV>
    expect(byCustomer.total).toBe(shop.orders.filter((o) => o.customerId === customerId).length)
    expect(byCustomer.orders.every((o) => o.customerId === customerId)).toBe(true)
    const q1 = (await call(tools, 'list_orders', { since: '2024-01-01', until: '2024-04-01', status: 'delivered', limit: 100 })).value as Page<'orders', OrderV>
    expect(q1.orders.every((o) => o.createdAt < '2024-04-01' && o.status === 'delivered')).toBe(true)
    expect(q1.total).toBe(shop.orders.filter((o) => o.createdAt < '2024-04-01' && o.status === 'delivered').length)
    const seen: string[] = []
    let offset: number | null = 0
    while (offset !== null) {
      const page: Page<'orders', OrderV> = (await call(tools, 'list_orders', { offset, limit: 100 })).value as Page<'orders', OrderV>
      seen.push(...page.orders.map((o) => o.id))
      offset = page.nextOffset
    }
    expect(seen).toEqual(shop.orders.map((o) => o.id))
  })

  it('returns copies: callers cannot corrupt the data set', async () => {
    const { tools, shop } = fresh()
    const { value } = await call(tools, 'get_order', { id: 'O0001' })
    ;(value as OrderV).items[0]!.quantity = 999
    expect(shop.orders.find((o) => o.id === 'O0001')!.items[0]!.quantity).not.toBe(999)
  })

  it('list_customers and search_products filter', async () => {
    const { tools, shop } = fresh()
    const de = (await call(tools, 'list_customers', { country: 'de', limit: 100 })).value as Page<'customers', { country: string }>
    expect(de.total).toBe(shop.customers.filter((c) => c.country === 'DE').length)
    expect(de.customers.every((c) => c.country === 'DE')).toBe(true)
    const cheap = (await call(tools, 'search_products', { query: 'LAMP', maxPriceCents: 1_000_000 })).value as { products: { name: string }[]; total: number }
    expect(cheap.products.map((p) => p.name).sort()).toEqual(['Desk Lamp', 'Desk Lamp Mk2', 'Headlamp', 'Headlamp Mk2'])
    const range = (await call(tools, 'search_products', { minPriceCents: 10_000, maxPriceCents: 20_000 })).value as { products: { priceCents: number }[] }
    expect(range.products.every((p) => p.priceCents >= 10_000 && p.priceCents <= 20_000)).toBe(true)
  })

  it('fails with stable codes: unknown ids, bad dates, bad paging, bad enums', async () => {
    const { tools } = fresh()
    for (const [name, id] of [['get_customer', 'C999'], ['get_order', 'nope'], ['get_product', 'P000']] as const) {
      await expect(call(tools, name, { id })).rejects.toMatchObject({ code: 'TOOL_FAILED', message: expect.stringContaining(JSON.stringify(id)) })
    }
    await expect(call(tools, 'list_orders', { since: 'yesterday' })).rejects.toBeInstanceOf(ToolArgsError)
    await expect(call(tools, 'list_orders', { limit: 101 })).rejects.toThrow(/\/limit/)
    await expect(call(tools, 'list_customers', { offset: -1 })).rejects.toThrow(/\/offset/)
    expect(() => byName(tools, 'list_orders').validateArgs!({ status: 'lost' })).toThrow(ToolArgsError)
    expect(() => byName(tools, 'get_order').validateArgs!({})).toThrow(/id/)
    await expect(call(tools, 'get_customer', { id: 'C999' })).rejects.toBeInstanceOf(ToolError)
  })
})
