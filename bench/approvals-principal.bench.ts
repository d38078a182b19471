/**
 * What the store-wide count of a principal's open requests costs (red team, stop 54): one whole
 * request (asked, opened, decided, allowed) with a principal (counted: one listing of its count
 * keys, one count key written and removed) beside the same request without one (not counted),
 * in the same process, over a memory store and a file store, with 0 and 150 requests of that
 * principal already open. `npx tsx bench/approvals-principal.bench.ts`. Printed, never asserted.
 *
 * @module
 */
import { setMaxListeners } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFileStore } from '../platforms/node/file-store.js'
import { createApprovalBroker, type ApprovalBroker, type PendingApproval } from '../src/approvals/index.js'
import { createMemoryStore } from '../src/durable/memory-store.js'
import type { DurableStore } from '../src/durable/store.js'
import { printTable, summarize } from './_stats.js'

let seq = 0

function ask(broker: ApprovalBroker, principal: string | undefined, signal: AbortSignal): { opened: Promise<PendingApproval>; outcome: Promise<unknown> } {
  const callId = `bench-${++seq}`
  const opened = new Promise<PendingApproval>((resolve) => {
    const stop = broker.subscribe((event) => {
      if (event.type !== 'requested' || event.approval.callId !== callId) return
      stop()
      resolve(event.approval)
    })
  })
  const execution = { callId, name: 'pay', arguments: { cents: seq }, signal, ...(principal === undefined ? {} : { principal }) }
  const outcome = Promise.resolve(broker.handler({ execution } as never)).catch((error: unknown) => error)
  return { opened, outcome }
}

async function whole(broker: ApprovalBroker, principal: string | undefined, samples: number): Promise<number[]> {
  const out: number[] = []
  const signal = new AbortController().signal
  for (let i = 0; i < samples; i++) {
    const start = performance.now()
    const { opened, outcome } = ask(broker, principal, signal)
    await broker.decide((await opened).id, { decision: 'allow' })
    await outcome
    out.push(performance.now() - start)
  }
  return out
}

async function measure(label: string, store: DurableStore, samples: number): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = []
  const broker = createApprovalBroker({ store })
  const row = (what: string, ms: number[]) => {
    const s = summarize(ms)
    rows.push({ store: label, request: what, 'median ms': s.median, 'p95 ms': s.p95, n: s.n })
  }
  await whole(broker, undefined, 5)
  await whole(broker, 'agent', 5)
  // Interleaved, so both see the same machine.
  const interleaved = async (open: number): Promise<void> => {
    const plain: number[] = []
    const counted: number[] = []
    for (let i = 0; i < samples; i++) {
      plain.push(...(await whole(broker, undefined, 1)))
      counted.push(...(await whole(broker, 'agent', 1)))
    }
    row(`no principal (not counted), ${open} open`, plain)
    row(`principal (counted), ${open} open`, counted)
  }
  await interleaved(0)
  // 150 of the principal's requests waiting (and as many keys in the store's listing).
  const holding = new AbortController()
  setMaxListeners(0, holding.signal)
  const held = Array.from({ length: 150 }, () => ask(broker, 'agent', holding.signal))
  await Promise.all(held.map((h) => h.opened))
  await interleaved(150)
  holding.abort()
  await Promise.all(held.map((h) => h.outcome))
  await broker.dispose()
  return rows
}

const dir = mkdtempSync(join(tmpdir(), 'toolyard-approvals-principal-'))
try {
  const rows = [...(await measure('memory', createMemoryStore(), 200)), ...(await measure('file', createFileStore(dir), 40))]
  printTable(rows)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
