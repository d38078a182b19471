/**
 * What open approvals cost a host while nobody decides (the product's promise: a run that
 * waits for a person costs only bytes in a store). N = 1,000 and 10,000 open requests
 * through a broker's handler, over a memory store and a file store; then 5 s of idle, and
 * the host's CPU (`process.cpuUsage`) and the store reads (`get`) and listings (`list`) per
 * second. Each case runs twice in this process: the broker at `BASELINE_REF` (every poll read
 * the settlement key of every open request) and this checkout's (a poll lists the settlement
 * markers written since the last one and reads only the keys they name), and this checkout's
 * once more over a window of 31 s, which holds one full pass (every open request's key read).
 * `npx tsx bench/approvals-idle.bench.ts [baseline-ref]`. Figures are printed, never asserted.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFileStore } from '../platforms/node/file-store.js'
import { readBrokerOptions } from '../src/approvals/_request.js'
import { createStoredBroker } from '../src/approvals/_store-broker.js'
import { FULL_PASS_EVERY_MS } from '../src/approvals/_store-markers.js'
import type { ApprovalBroker } from '../src/approvals/index.js'
import { createMemoryStore } from '../src/durable/memory-store.js'
import type { DurableStore } from '../src/durable/store.js'
import { importAs, sourceAt } from './_baseline.js'
import { printTable } from './_stats.js'

/** The broker before markers (main at 9e7815f). */
const BASELINE_REF = process.argv[2] ?? '9e7815f'
const IDLE_MS = 5000

type Make = typeof createStoredBroker
const baseline = await importAs<{ createStoredBroker: Make }>('src/approvals/_store-broker.ts', sourceAt('src/approvals/_store-broker.ts', BASELINE_REF), `approvals-idle-${BASELINE_REF}`)

/** `store`, counting the calls the broker makes of it. */
function counting(store: DurableStore) {
  const counts = { get: 0, list: 0 }
  const counted: DurableStore = {
    get: (key) => (counts.get++, store.get(key)),
    put: (key, value, options) => store.put(key, value, options),
    delete: (key, options) => store.delete(key, options),
    list: (prefix, options) => (counts.list++, store.list(prefix, options)),
  }
  return { counted, counts }
}

let seq = 0
/** Asks like the registry does; resolves once the request is open. */
function ask(broker: ApprovalBroker): Promise<unknown> {
  const signal = new AbortController().signal
  const callId = `idle-${++seq}`
  const opened = new Promise<void>((resolve) => {
    const stop = broker.subscribe((event) => {
      if (event.type !== 'requested' || event.approval.callId !== callId) return
      stop()
      resolve()
    })
  })
  void Promise.resolve(broker.handler({ execution: { callId, name: 'write_file', arguments: { path: 'a.md' }, signal }, reason: 'changes the workspace' } as never)).catch(() => undefined)
  return opened
}

async function idle(label: string, which: string, make: Make, store: DurableStore, open: number, windowMs = IDLE_MS): Promise<Record<string, string | number>> {
  const { counted, counts } = counting(store)
  const broker = make(readBrokerOptions({ store: counted, timeoutMs: 3_600_000 }), counted)
  for (let i = 0; i < open; i += 500) await Promise.all(Array.from({ length: Math.min(500, open - i) }, () => ask(broker)))
  // Past the 3 s after which the file store keeps a reading of an unchanged directory's names.
  await new Promise((resolve) => setTimeout(resolve, 4000))
  counts.get = 0
  counts.list = 0
  const cpu = process.cpuUsage()
  const start = performance.now()
  await new Promise((resolve) => setTimeout(resolve, windowMs))
  const used = process.cpuUsage(cpu)
  const seconds = (performance.now() - start) / 1000
  const row = {
    store: label,
    broker: which,
    open,
    'idle s': windowMs / 1000,
    'CPU ms/s': (used.user + used.system) / 1000 / seconds,
    'gets/s': counts.get / seconds,
    'lists/s': counts.list / seconds,
  }
  await broker.dispose()
  return row
}

const dir = mkdtempSync(join(tmpdir(), 'toolyard-approvals-idle-'))
try {
  const rows: Array<Record<string, string | number>> = []
  let n = 0
  const stores: Array<[string, () => DurableStore]> = [
    ['memory', () => createMemoryStore()],
    ['file', () => createFileStore(join(dir, `s-${n++}`))],
  ]
  for (const open of [1000, 10_000]) {
    for (const [label, fresh] of stores) {
      // Alternated: which broker goes first changes with the case.
      const order: Array<[string, Make]> = (open + label.length) % 2 === 0 ? [[`baseline ${BASELINE_REF}`, baseline.createStoredBroker], ['this checkout', createStoredBroker]] : [['this checkout', createStoredBroker], [`baseline ${BASELINE_REF}`, baseline.createStoredBroker]]
      for (const [which, make] of order) {
        rows.push(await idle(label, which, make, fresh(), open))
        console.error(JSON.stringify(rows.at(-1)))
      }
      // A window holding one full pass (every open request's settlement key read, once per FULL_PASS_EVERY_MS).
      rows.push(await idle(label, 'this checkout', createStoredBroker, fresh(), open, FULL_PASS_EVERY_MS + 1000))
      console.error(JSON.stringify(rows.at(-1)))
    }
  }
  printTable(rows)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
