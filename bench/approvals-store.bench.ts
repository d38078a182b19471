/**
 * Durable approvals' costs (issue 21): a broker over a store, in memory and in a directory.
 * What one whole request costs (asked, opened, decided, allowed), a decision through the same broker
 * and through another one (which the waiting call hears by polling), a re-asked call
 * answered from a recorded decision, `pending()` over 10 to 500 open requests and over
 * 1,000 garbage records, and the bytes of one record.
 * `npx tsx bench/approvals-store.bench.ts`. Figures are printed, never asserted.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFileStore } from '../platforms/node/file-store.js'
import { createApprovalBroker } from '../src/approvals/index.js'
import type { PendingApproval, ApprovalBroker } from '../src/approvals/index.js'
import { createMemoryStore } from '../src/durable/memory-store.js'
import type { DurableStore } from '../src/durable/store.js'
import { printTable, summarize } from './_stats.js'

const PARAMETERS = { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } }
let seq = 0

/** Asks like the registry does; resolves with the request once it is open (the `requested` event), and the call's outcome. */
function ask(broker: ApprovalBroker, callId = `bench-${++seq}:code:1`): { opened: Promise<PendingApproval>; outcome: Promise<unknown> } {
  const opened = new Promise<PendingApproval>((resolve) => {
    const stop = broker.subscribe((event) => {
      if (event.type !== 'requested' || event.approval.callId !== callId) return
      stop()
      resolve(event.approval)
    })
  })
  const args = { path: 'notes/todo.md', content: '- ship it\n'.repeat(20) }
  const outcome = Promise.resolve(
    broker.handler({ execution: { callId, name: 'write_file', arguments: args, signal: new AbortController().signal }, parameters: PARAMETERS, reason: 'changes the workspace' } as never),
  ).catch((error: unknown) => error)
  return { opened, outcome }
}

async function time(samples: number, body: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < samples; i++) {
    const start = performance.now()
    await body()
    out.push(performance.now() - start)
  }
  return out
}

async function measure(label: string, shared: () => DurableStore, fresh: () => DurableStore): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = []
  const row = (what: string, ms: number[]) => {
    const s = summarize(ms)
    rows.push({ store: label, operation: what, 'median ms': s.median, 'p95 ms': s.p95, n: s.n })
  }
  const a = createApprovalBroker({ store: shared() })
  const b = createApprovalBroker({ store: shared() })
  row('ask, open, decide (same broker), allowed: one whole request', await time(50, async () => {
    const { opened, outcome } = ask(a)
    const request = await opened
    await a.decide(request.id, { decision: 'allow' })
    await outcome
  }))
  const pairs: number[] = []
  for (let i = 0; i < 50; i++) {
    const { opened, outcome } = ask(a)
    const request = await opened
    const start = performance.now()
    await a.decide(request.id, { decision: 'allow' })
    await outcome
    pairs.push(performance.now() - start)
  }
  row('decide (same broker) → call allowed', pairs)
  const remote: number[] = []
  for (let i = 0; i < 12; i++) {
    const { opened, outcome } = ask(a)
    const request = await opened
    const start = performance.now()
    await b.decide(request.id, { decision: 'allow' })
    await outcome
    remote.push(performance.now() - start)
  }
  row(`decide (other broker) → call allowed (polls every ${a.pollIntervalMs} ms)`, remote)
  const reasked: number[] = []
  for (let i = 0; i < 50; i++) {
    const callId = `reask-${++seq}`
    const first = ask(a, callId)
    const request = await first.opened
    await b.decide(request.id, { decision: 'allow' })
    await first.outcome
    const start = performance.now()
    await ask(b, callId).outcome
    reasked.push(performance.now() - start)
  }
  row('re-ask of a decided call → answered', reasked)
  for (const open of [10, 100, 500]) {
    const s = fresh()
    const broker = createApprovalBroker({ store: s })
    const asked = Array.from({ length: open }, () => ask(broker))
    await Promise.all(asked.map((x) => x.opened))
    row(`pending() with ${open} open requests`, await time(open >= 500 ? 5 : 20, () => createApprovalBroker({ store: s }).pending()))
    await broker.dispose()
  }
  const garbage = fresh()
  for (let i = 0; i < 1000; i++) await garbage.put(`approvals/open/${i.toString(16).padStart(32, '0')}`, `{"format":"toolyard-approval/1","approval":${'['.repeat(80)}${']'.repeat(80)}}`)
  row('pending() over 1,000 malformed records', await time(5, () => createApprovalBroker({ store: garbage }).pending()))
  await a.dispose()
  await b.dispose()
  return rows
}

const dir = mkdtempSync(join(tmpdir(), 'toolyard-approvals-bench-'))
try {
  const memory = createMemoryStore()
  let n = 0
  const rows = [
    ...(await measure('memory', () => memory, () => createMemoryStore())),
    ...(await measure('file', () => createFileStore(join(dir, 'shared')), () => createFileStore(join(dir, `fresh-${n++}`)))),
  ]
  printTable(rows)
  const record = await (async () => {
    const s = createMemoryStore()
    const broker = createApprovalBroker({ store: s })
    await ask(broker).opened
    const key = (await s.list('approvals/open/')).entries[0]!.key
    const bytes = new TextEncoder().encode((await s.get(key))!.value).length
    await broker.dispose()
    return bytes
  })()
  console.log(`\none open record (write_file, 200 characters of content): ${record} bytes`)
  // The worst a listing accepts: records at the size cap, each one parsed and checked in full
  // (30,000 values of arguments), 1,000 of them; the listing stops at its 8 MiB text budget.
  const worst = createMemoryStore()
  const template = (await (async () => {
    const broker = createApprovalBroker({ store: worst })
    const request = await ask(broker).opened
    await broker.dispose()
    return request
  })())
  const big = (hash: string) =>
    JSON.stringify({ format: 'toolyard-approval/1', approval: { ...template, id: `${hash}.${crypto.randomUUID()}`, arguments: new Array(30_000).fill(0) } })
  for (let i = 0; i < 1000; i++) {
    const hash = i.toString(16).padStart(32, '0')
    await worst.put(`approvals/open/${hash}`, big(hash))
  }
  // The host's loop while the listing runs: the longest gap between ticks of a 1 ms interval.
  let last = performance.now()
  let longest = 0
  const ticker = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 1)
  const start = performance.now()
  const listed = await createApprovalBroker({ store: worst }).pending()
  const took = performance.now() - start
  clearInterval(ticker)
  console.log(
    `pending() over 1,000 records of ${(big('0'.repeat(32)).length / 1024).toFixed(0)} KiB (memory store): ${took.toFixed(0)} ms, ${listed.length} listed (the 8 MiB budget), ` +
      `longest event-loop stall ${longest.toFixed(1)} ms`,
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}
