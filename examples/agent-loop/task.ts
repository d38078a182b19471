/**
 * The task both scripted models solve over the demo shop tools, the answer format, and
 * the two scripts: a native one that makes the calls a function-calling model would make
 * and reasons over the JSON it reads back, and a Code Mode one that writes a single
 * `run_code` program doing the whole job.
 *
 * @module
 */
import { ToolError } from '../../src/index.js'
import type { JsonObject } from '../../src/index.js'
import type { Order } from '../../demo/tools/index.js'
import type { ModelScript, ModelToolCall, ModelTurn, ToolMessage } from './loop.js'

/** The user's question, definitions included so every solver reads it the same way. */
export const TASK_QUESTION = [
  'Which 3 customers spent the most on delivered orders in the last 90 days of the data set, and what is each one\'s most-bought product?',
  'Definitions: the window is the 90 days (90 × 24 h) up to and including the newest order\'s timestamp;',
  'spend is the sum of the totals of a customer\'s delivered orders created in the window;',
  'most-bought is the product with the largest total quantity across those same orders.',
  'Break ties by the lower id.',
].join(' ')

/** The system instructions placed before the runtime's own prompt sections. */
export const TASK_INSTRUCTIONS = 'You are a data analyst for an online shop. Answer with the tools you are given; do not guess figures.'

/** Length of the window, in milliseconds. */
export const WINDOW_MS = 90 * 86_400_000

/** One ranked customer of the answer. */
export interface TopCustomer {
  readonly customerId: string
  readonly name: string
  readonly spentCents: number
  /** Delivered orders of this customer in the window. */
  readonly orders: number
  readonly topProductId: string
  readonly topProductName: string
  readonly topProductQuantity: number
}

/** The structured answer. */
export interface TaskAnswer {
  /** Window start (inclusive), ISO timestamp. */
  readonly since: string
  /** The newest order's timestamp (window end, inclusive). */
  readonly until: string
  readonly customers: readonly TopCustomer[]
}

/** `123456` → `$1,234.56`. */
export function formatCents(cents: number): string {
  const whole = Math.floor(cents / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return `$${whole}.${String(cents % 100).padStart(2, '0')}`
}

/** The answer as the final message text (the Code Mode program prints the very same text). */
export function renderAnswer(answer: TaskAnswer): string {
  const lines = [`Top ${answer.customers.length} customers by spend on delivered orders created ${answer.since} to ${answer.until} (the last 90 days of the data set):`]
  answer.customers.forEach((c, i) => {
    lines.push(
      `${i + 1}. ${c.name} (${c.customerId}) spent ${formatCents(c.spentCents)} on ${c.orders} order${c.orders === 1 ? '' : 's'}; ` +
        `most-bought product: ${c.topProductName} (${c.topProductId}), ${c.topProductQuantity} unit${c.topProductQuantity === 1 ? '' : 's'}`,
    )
  })
  return lines.join('\n')
}

const HEADER = /^Top \d+ customers by spend on delivered orders created (\S+) to (\S+) \(the last 90 days of the data set\):$/
const LINE = /^(\d+)\. (.+) \((C\d+)\) spent \$([\d,]+)\.(\d{2}) on (\d+) orders?; most-bought product: (.+) \((P\d+)\), (\d+) units?$/

/**
 * Parses a final answer text back into a {@link TaskAnswer}, so answers from both modes
 * can be compared field by field. Throws `ToolError('INVALID_OPTIONS')` on any other text.
 */
export function parseAnswer(text: string): TaskAnswer {
  const [head = '', ...rest] = text.trim().split('\n')
  const header = HEADER.exec(head)
  if (header === null) throw new ToolError('INVALID_OPTIONS', `not an answer header: ${JSON.stringify(head)}`)
  const customers = rest.map((line, i): TopCustomer => {
    const m = LINE.exec(line)
    if (m === null || Number(m[1]) !== i + 1) throw new ToolError('INVALID_OPTIONS', `not an answer line: ${JSON.stringify(line)}`)
    return {
      name: m[2]!,
      customerId: m[3]!,
      spentCents: Number(m[4]!.replace(/,/g, '')) * 100 + Number(m[5]),
      orders: Number(m[6]),
      topProductName: m[7]!,
      topProductId: m[8]!,
      topProductQuantity: Number(m[9]),
    }
  })
  return { since: header[1]!, until: header[2]!, customers }
}

// ───────────────────────── native mode ─────────────────────────

interface OrderPage {
  readonly orders: readonly Order[]
  readonly total: number
  readonly nextOffset: number | null
}

/** Reads a tool message the way a model does: as the JSON text it is. */
function read<T>(message: ToolMessage | undefined): T {
  if (message === undefined) throw new ToolError('TOOL_FAILED', 'scripted model: a tool result is missing')
  if (message.isError) throw new ToolError('TOOL_FAILED', `scripted model: ${message.name} failed: ${message.content}`)
  return JSON.parse(message.content) as T
}

/** Ranks customers by spend and picks each one's most-bought product (ties → lower id). */
function rank(orders: readonly Order[]): { customerId: string; spentCents: number; orders: number; productId: string; quantity: number }[] {
  const byCustomer = new Map<string, { spentCents: number; orders: number; quantities: Map<string, number> }>()
  for (const order of orders) {
    let entry = byCustomer.get(order.customerId)
    if (entry === undefined) byCustomer.set(order.customerId, (entry = { spentCents: 0, orders: 0, quantities: new Map() }))
    entry.spentCents += order.totalCents
    entry.orders += 1
    for (const item of order.items) entry.quantities.set(item.productId, (entry.quantities.get(item.productId) ?? 0) + item.quantity)
  }
  const byId = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
  return [...byCustomer]
    .sort(([idA, a], [idB, b]) => b.spentCents - a.spentCents || byId(idA, idB))
    .slice(0, 3)
    .map(([customerId, entry]) => {
      const [productId, quantity] = [...entry.quantities].sort(([pa, qa], [pb, qb]) => qb - qa || byId(pa, pb))[0]!
      return { customerId, spentCents: entry.spentCents, orders: entry.orders, productId, quantity }
    })
}

/**
 * The native script: the calls a function-calling model makes, step by step. It learns the
 * data set's end from the last order, pages through the delivered orders of the window
 * (remaining pages in one parallel batch), ranks customers from what it read, then fetches
 * the three customers and their top products in one parallel batch, and answers.
 */
export function* nativeScript(): ModelScript {
  let next = 1
  const call = (name: string, args: JsonObject): ModelToolCall => ({ id: `call_${next++}`, name, arguments: args })
  const turn = (text: string, ...calls: ModelToolCall[]): ModelTurn => ({ type: 'tool-calls', text, calls })

  let results = yield turn('First I need to know where the data set ends. Orders are listed oldest first, so I check the total.', call('list_orders', { limit: 1 }))
  const head = read<OrderPage>(results[0])

  results = yield turn(`There are ${head.total} orders; the newest is the last one.`, call('list_orders', { offset: head.total - 1, limit: 1 }))
  const newest = read<OrderPage>(results[0]).orders[0]
  if (newest === undefined) throw new ToolError('TOOL_FAILED', 'scripted model: the order list is empty')
  const until = newest.createdAt
  const since = new Date(Date.parse(until) - WINDOW_MS).toISOString()

  const pageSize = 100
  results = yield turn(`The window is ${since} to ${until}. Listing the delivered orders in it.`, call('list_orders', { status: 'delivered', since, limit: pageSize }))
  const first = read<OrderPage>(results[0])
  const orders = [...first.orders]
  if (first.nextOffset !== null) {
    const offsets: number[] = []
    for (let offset = first.nextOffset; offset < first.total; offset += pageSize) offsets.push(offset)
    results = yield turn(
      `${first.total} orders match; fetching the remaining pages at once.`,
      ...offsets.map((offset) => call('list_orders', { status: 'delivered', since, offset, limit: pageSize })),
    )
    for (const message of results) orders.push(...read<OrderPage>(message).orders)
  }

  const top = rank(orders)
  const productIds = [...new Set(top.map((t) => t.productId))]
  results = yield turn(
    `From ${orders.length} delivered orders the top spenders are ${top.map((t) => t.customerId).join(', ')}. Looking up their names and top products.`,
    ...top.map((t) => call('get_customer', { id: t.customerId })),
    ...productIds.map((id) => call('get_product', { id })),
  )
  const names = new Map<string, string>()
  for (const message of results) {
    const record = read<{ id: string; name: string }>(message)
    names.set(record.id, record.name)
  }
  const answer: TaskAnswer = {
    since,
    until,
    customers: top.map((t) => ({
      customerId: t.customerId,
      name: names.get(t.customerId) ?? t.customerId,
      spentCents: t.spentCents,
      orders: t.orders,
      topProductId: t.productId,
      topProductName: names.get(t.productId) ?? t.productId,
      topProductQuantity: t.quantity,
    })),
  }
  yield { type: 'answer', text: renderAnswer(answer) }
}

// ───────────────────────── code mode ─────────────────────────

/**
 * The program the Code Mode model writes: the whole task in one run, printing only the
 * answer. Self-contained (it shares no code with the host), as a model's program would be.
 */
export const TASK_PROGRAM = `const WINDOW_MS = 90 * 86_400_000
const head = await tools.list_orders({ limit: 1 })
const last = await tools.list_orders({ offset: head.total - 1, limit: 1 })
const until = last.orders[0].createdAt
const since = new Date(Date.parse(until) - WINDOW_MS).toISOString()

const orders = []
for (let offset = 0; ; ) {
  const page = await tools.list_orders({ status: 'delivered', since, offset, limit: 100 })
  orders.push(...page.orders)
  if (page.nextOffset === null) break
  offset = page.nextOffset
}

type Stats = { spent: number; count: number; qty: Map<string, number> }
const stats = new Map<string, Stats>()
for (const o of orders) {
  const s = stats.get(o.customerId) ?? { spent: 0, count: 0, qty: new Map() }
  stats.set(o.customerId, s)
  s.spent += o.totalCents
  s.count += 1
  for (const item of o.items) s.qty.set(item.productId, (s.qty.get(item.productId) ?? 0) + item.quantity)
}
const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
const top = [...stats].sort(([a, x], [b, y]) => y.spent - x.spent || byId(a, b)).slice(0, 3)

const money = (c: number) => '$' + String(Math.floor(c / 100)).replace(/\\B(?=(\\d{3})+(?!\\d))/g, ',') + '.' + String(c % 100).padStart(2, '0')
const plural = (n: number, word: string) => n + ' ' + word + (n === 1 ? '' : 's')
const lines = await Promise.all(top.map(async ([id, s], i) => {
  const [productId, quantity] = [...s.qty].sort(([a, x], [b, y]) => y - x || byId(a, b))[0]
  const [customer, product] = await Promise.all([tools.get_customer({ id }), tools.get_product({ id: productId })])
  return \`\${i + 1}. \${customer.name} (\${id}) spent \${money(s.spent)} on \${plural(s.count, 'order')}; most-bought product: \${product.name} (\${productId}), \${plural(quantity, 'unit')}\`
}))
console.log(\`Top \${top.length} customers by spend on delivered orders created \${since} to \${until} (the last 90 days of the data set):\`)
console.log(lines.join('\\n'))`

/**
 * The end of every Code Mode script: one `run_code` call with {@link TASK_PROGRAM}
 * (the model's `text` and call id given), then the program's output as the answer.
 */
export function* taskProgramTurns(text: string, callId: string): ModelScript {
  const results = yield {
    type: 'tool-calls',
    text,
    calls: [{ id: callId, name: 'run_code', arguments: { description: 'Top 3 delivered-order spenders of the last 90 days and their most-bought products', code: TASK_PROGRAM } }],
  }
  const output = results[0]
  if (output === undefined || output.isError) throw new ToolError('TOOL_FAILED', `scripted model: run_code failed: ${output?.content ?? 'no result'}`)
  yield { type: 'answer', text: output.content.trim() }
}

/** The Code Mode script: one `run_code` call, then the program's output as the answer. */
export function* codeScript(): ModelScript {
  yield* taskProgramTurns('I will compute this in one program and print only the answer.', 'call_1')
}
