/**
 * A deterministic shop data set (customers, products, orders from a seeded PRNG) and
 * read-only tools over it. It is big enough to make Code Mode's point: answering "which
 * gold customers spent most on shipped orders last quarter" natively drags hundreds of
 * JSON records through the context; a program reads them and prints one line.
 *
 * Platform-neutral; every tool is concurrency-safe.
 *
 * @module
 */
import { ToolArgsError, ToolError } from '../../src/errors.js'
import { defineTool } from '../../src/schema/define-tool.js'
import type { AnyToolDefinition } from '../../src/types.js'

/** Customer loyalty tiers. */
export type CustomerTier = 'standard' | 'gold' | 'platinum'
/** Order lifecycle states. */
export type OrderStatus = 'pending' | 'paid' | 'shipped' | 'delivered' | 'cancelled' | 'refunded'

/** One customer. */
export interface Customer {
  id: string
  name: string
  email: string
  city: string
  country: string
  tier: CustomerTier
  joinedAt: string
}

/** One catalogue product (prices in whole cents, so sums stay exact). */
export interface Product {
  id: string
  name: string
  category: string
  priceCents: number
  stock: number
}

/** One order line. */
export interface OrderItem {
  productId: string
  quantity: number
  unitPriceCents: number
}

/** One order. */
export interface Order {
  id: string
  customerId: string
  status: OrderStatus
  createdAt: string
  items: OrderItem[]
  totalCents: number
}

/** The whole data set. */
export interface ShopData {
  readonly customers: readonly Customer[]
  readonly products: readonly Product[]
  readonly orders: readonly Order[]
}

/** Options for {@link createShopData}. */
export interface ShopDataOptions {
  /** PRNG seed (default 42): the same seed always yields the same data. */
  readonly seed?: number
  /** Default 60. */
  readonly customers?: number
  /** Default 40. */
  readonly products?: number
  /** Default 400. */
  readonly orders?: number
}

/** mulberry32: a tiny deterministic PRNG, identical in every runtime. */
function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const FIRST = ['Ada', 'Ben', 'Chloe', 'Dev', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kemi', 'Liam', 'Mei', 'Noah', 'Olga', 'Priya', 'Quinn', 'Rosa', 'Sami', 'Tess']
const LAST = ['Okafor', 'Schmidt', 'Nakamura', 'Silva', 'Novak', 'Haddad', 'Larsen', 'Moreau', 'Patel', 'Kowalski', 'Ibrahim', 'Rossi']
const PLACES: readonly [string, string][] = [
  ['Berlin', 'DE'],
  ['Lisbon', 'PT'],
  ['Osaka', 'JP'],
  ['Lagos', 'NG'],
  ['Toronto', 'CA'],
  ['Austin', 'US'],
  ['Lyon', 'FR'],
  ['Pune', 'IN'],
  ['Krakow', 'PL'],
  ['Milan', 'IT'],
]
const CATALOGUE: Readonly<Record<string, readonly string[]>> = {
  audio: ['Studio Headphones', 'Wireless Earbuds', 'Bluetooth Speaker', 'USB Microphone', 'Soundbar'],
  computing: ['Mechanical Keyboard', 'Ergonomic Mouse', '27" Monitor', 'USB-C Dock', 'Laptop Stand', 'External SSD 1TB'],
  home: ['Desk Lamp', 'Air Purifier', 'Smart Plug', 'Coffee Grinder', 'Kettle', 'Standing Mat'],
  outdoor: ['Trail Backpack', 'Water Bottle', 'Headlamp', 'Camping Stove', 'Rain Jacket'],
  office: ['Notebook Set', 'Fountain Pen', 'Desk Organizer', 'Whiteboard', 'Paper Shredder', 'Label Maker'],
}
const STATUSES: readonly OrderStatus[] = ['pending', 'paid', 'shipped', 'shipped', 'delivered', 'delivered', 'delivered', 'cancelled', 'refunded']
/** 2024-01-01T00:00:00Z: data is anchored to a fixed date, never the clock. */
const EPOCH = Date.UTC(2024, 0, 1)
const DAY = 86_400_000

/** Builds the deterministic data set. */
export function createShopData(options: ShopDataOptions = {}): ShopData {
  const random = prng(options.seed ?? 42)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T
  const int = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1))
  const pad = (n: number, width: number): string => String(n).padStart(width, '0')

  const customers: Customer[] = []
  for (let i = 1; i <= (options.customers ?? 60); i++) {
    const first = pick(FIRST)
    const last = pick(LAST)
    const [city, country] = pick(PLACES)
    const roll = random()
    customers.push({
      id: `C${pad(i, 3)}`,
      name: `${first} ${last}`,
      email: `${first}.${last}${i}@example.com`.toLowerCase(),
      city,
      country,
      tier: roll < 0.6 ? 'standard' : roll < 0.88 ? 'gold' : 'platinum',
      joinedAt: new Date(EPOCH - int(30, 900) * DAY).toISOString().slice(0, 10),
    })
  }

  const products: Product[] = []
  const categories = Object.keys(CATALOGUE)
  for (let i = 1; i <= (options.products ?? 40); i++) {
    const category = categories[(i - 1) % categories.length] as string
    const names = CATALOGUE[category] as readonly string[]
    const base = names[Math.floor((i - 1) / categories.length) % names.length] as string
    const edition = Math.floor((i - 1) / (categories.length * names.length))
    products.push({
      id: `P${pad(i, 3)}`,
      name: edition === 0 ? base : `${base} Mk${edition + 1}`,
      category,
      priceCents: int(5, 400) * 100 - 1,
      stock: int(0, 250),
    })
  }

  const orders: Order[] = []
  for (let i = 1; i <= (options.orders ?? 400); i++) {
    const items: OrderItem[] = []
    const lines = int(1, 4)
    const used = new Set<string>()
    for (let l = 0; l < lines; l++) {
      const product = pick(products)
      if (used.has(product.id)) continue
      used.add(product.id)
      items.push({ productId: product.id, quantity: int(1, 3), unitPriceCents: product.priceCents })
    }
    const createdAt = new Date(EPOCH + int(0, 364) * DAY + int(0, 86_399) * 1000).toISOString()
    orders.push({
      id: `O${pad(i, 4)}`,
      customerId: (pick(customers) as Customer).id,
      status: pick(STATUSES),
      createdAt,
      items,
      totalCents: items.reduce((sum, item) => sum + item.quantity * item.unitPriceCents, 0),
    })
  }
  orders.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0))
  return { customers, products, orders }
}

// ───────────────────────── schemas (DSL) ─────────────────────────

const customerSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', required: true },
    name: { type: 'string', required: true },
    email: { type: 'string', required: true },
    city: { type: 'string', required: true },
    country: { type: 'string', required: true, description: 'ISO 3166-1 alpha-2 code.' },
    tier: { type: 'string', enum: ['standard', 'gold', 'platinum'], required: true },
    joinedAt: { type: 'string', required: true, description: 'YYYY-MM-DD.' },
  },
} as const

const productSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', required: true },
    name: { type: 'string', required: true },
    category: { type: 'string', required: true },
    priceCents: { type: 'integer', required: true, description: 'Price in cents.' },
    stock: { type: 'integer', required: true },
  },
} as const

const orderSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', required: true },
    customerId: { type: 'string', required: true },
    status: { type: 'string', enum: ['pending', 'paid', 'shipped', 'delivered', 'cancelled', 'refunded'], required: true },
    createdAt: { type: 'string', required: true, description: 'ISO 8601 timestamp (UTC).' },
    items: {
      type: 'array',
      required: true,
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          productId: { type: 'string', required: true },
          quantity: { type: 'integer', required: true },
          unitPriceCents: { type: 'integer', required: true },
        },
      },
    },
    totalCents: { type: 'integer', required: true },
  },
} as const

const pageProperties = {
  total: { type: 'integer', required: true, description: 'Matches before paging.' },
  offset: { type: 'integer', required: true },
  nextOffset: { oneOf: [{ type: 'integer' }, { type: 'null' }], required: true, description: 'Pass as offset for the next page; null at the end.' },
} as const

const pagingParameters = {
  offset: { type: 'integer', description: 'Skip this many matches (default 0).' },
  limit: { type: 'integer', description: 'Page size, 1-100 (default 50).' },
} as const

function json(value: unknown): [{ type: 'text'; text: string }] {
  return [{ type: 'text', text: JSON.stringify(value, null, 2) }]
}

function page<T>(all: readonly T[], offset: number | undefined, limit: number | undefined): { slice: T[]; total: number; offset: number; nextOffset: number | null } {
  const start = offset ?? 0
  const size = limit ?? 50
  if (start < 0) throw new ToolArgsError([{ path: '/offset', message: 'must be at least 0' }])
  if (size < 1 || size > 100) throw new ToolArgsError([{ path: '/limit', message: 'must be between 1 and 100' }])
  const slice = all.slice(start, start + size)
  return { slice, total: all.length, offset: start, nextOffset: start + size < all.length ? start + size : null }
}

function parseDate(value: string | undefined, field: string): number | undefined {
  if (value === undefined) return undefined
  const time = Date.parse(value)
  if (Number.isNaN(time)) throw new ToolArgsError([{ path: `/${field}`, message: 'must be an ISO 8601 date or timestamp' }])
  return time
}

function missing(kind: string, id: string): ToolError {
  return new ToolError('TOOL_FAILED', `no ${kind} with id ${JSON.stringify(id)}`)
}

/** Builds the shop tools over `data`. */
export function createShopTools(data: ShopData): AnyToolDefinition[] {
  const customersById = new Map(data.customers.map((c) => [c.id, c]))
  const productsById = new Map(data.products.map((p) => [p.id, p]))
  const ordersById = new Map(data.orders.map((o) => [o.id, o]))
  const safe = (): boolean => true

  const listCustomers = defineTool({
    name: 'list_customers',
    description: 'List customers, optionally filtered by tier or country, one page at a time.',
    parameters: {
      tier: { type: 'string', enum: ['standard', 'gold', 'platinum'] },
      country: { type: 'string', description: 'ISO 3166-1 alpha-2 code, e.g. "DE".' },
      ...pagingParameters,
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: { customers: { type: 'array', required: true, items: customerSchema }, ...pageProperties },
      },
      render: (_args, value) => json(value),
    },
    execute(args) {
      const matching = data.customers.filter((c) => (args.tier === undefined || c.tier === args.tier) && (args.country === undefined || c.country === args.country.toUpperCase()))
      const { slice, ...rest } = page(matching, args.offset, args.limit)
      return { customers: slice.map((c) => ({ ...c })), ...rest }
    },
    isConcurrencySafe: safe,
  })

  const getCustomer = defineTool({
    name: 'get_customer',
    description: 'Get one customer by id (e.g. "C007").',
    parameters: { id: { type: 'string', required: true } },
    output: { schema: customerSchema, render: (_args, value) => json(value) },
    execute(args) {
      const customer = customersById.get(args.id)
      if (customer === undefined) throw missing('customer', args.id)
      return { ...customer }
    },
    isConcurrencySafe: safe,
  })

  const listOrders = defineTool({
    name: 'list_orders',
    description: 'List orders (oldest first), filtered by customer, status and creation date range, one page at a time.',
    parameters: {
      customerId: { type: 'string' },
      status: { type: 'string', enum: ['pending', 'paid', 'shipped', 'delivered', 'cancelled', 'refunded'] },
      since: { type: 'string', description: 'Only orders created at or after this ISO date/timestamp.' },
      until: { type: 'string', description: 'Only orders created before this ISO date/timestamp.' },
      ...pagingParameters,
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: { orders: { type: 'array', required: true, items: orderSchema }, ...pageProperties },
      },
      render: (_args, value) => json(value),
    },
    execute(args) {
      const since = parseDate(args.since, 'since')
      const until = parseDate(args.until, 'until')
      const matching = data.orders.filter((o) => {
        if (args.customerId !== undefined && o.customerId !== args.customerId) return false
        if (args.status !== undefined && o.status !== args.status) return false
        const at = Date.parse(o.createdAt)
        return (since === undefined || at >= since) && (until === undefined || at < until)
      })
      const { slice, ...rest } = page(matching, args.offset, args.limit)
      return { orders: slice.map(copyOrder), ...rest }
    },
    isConcurrencySafe: safe,
  })

  const getOrder = defineTool({
    name: 'get_order',
    description: 'Get one order by id (e.g. "O0042").',
    parameters: { id: { type: 'string', required: true } },
    output: { schema: orderSchema, render: (_args, value) => json(value) },
    execute(args) {
      const order = ordersById.get(args.id)
      if (order === undefined) throw missing('order', args.id)
      return copyOrder(order)
    },
    isConcurrencySafe: safe,
  })

  const getProduct = defineTool({
    name: 'get_product',
    description: 'Get one product by id (e.g. "P012").',
    parameters: { id: { type: 'string', required: true } },
    output: { schema: productSchema, render: (_args, value) => json(value) },
    execute(args) {
      const product = productsById.get(args.id)
      if (product === undefined) throw missing('product', args.id)
      return { ...product }
    },
    isConcurrencySafe: safe,
  })

  const searchProducts = defineTool({
    name: 'search_products',
    description: 'Search the catalogue by name substring, category and price range (cents).',
    parameters: {
      query: { type: 'string', description: 'Case-insensitive substring of the product name.' },
      category: { type: 'string', enum: Object.keys(CATALOGUE) as string[] },
      minPriceCents: { type: 'integer' },
      maxPriceCents: { type: 'integer' },
      limit: { type: 'integer', description: 'At most this many products, 1-100 (default 50).' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          products: { type: 'array', required: true, items: productSchema },
          total: { type: 'integer', required: true },
        },
      },
      render: (_args, value) => json(value),
    },
    execute(args) {
      const needle = args.query?.toLowerCase()
      const matching = data.products.filter(
        (p) =>
          (needle === undefined || p.name.toLowerCase().includes(needle)) &&
          (args.category === undefined || p.category === args.category) &&
          (args.minPriceCents === undefined || p.priceCents >= args.minPriceCents) &&
          (args.maxPriceCents === undefined || p.priceCents <= args.maxPriceCents),
      )
      const { slice, total } = page(matching, 0, args.limit)
      return { products: slice.map((p) => ({ ...p })), total }
    },
    isConcurrencySafe: safe,
  })

  return [listCustomers, getCustomer, listOrders, getOrder, getProduct, searchProducts]
}

function copyOrder(order: Order): Order {
  return { ...order, items: order.items.map((item) => ({ ...item })) }
}
