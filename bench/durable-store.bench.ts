/**
 * The durable store drivers' costs (issue 21): what one operation costs in memory and in a
 * directory (each file-store write is a temp file, an fsync, a rename and a directory
 * fsync), a 64 KiB value (the expected size of a parked run's journal), and a list page.
 * `npx tsx bench/durable-store.bench.ts`. Figures are printed, never asserted.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFileStore } from '../platforms/node/file-store.js'
import { createMemoryStore } from '../src/durable/memory-store.js'
import type { DurableStore } from '../src/durable/store.js'
import { printTable, summarize } from './_stats.js'

async function time(samples: number, body: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < samples; i++) {
    const start = performance.now()
    await body(i)
    out.push(performance.now() - start)
  }
  return out
}

async function measure(label: string, store: DurableStore): Promise<Array<Record<string, string | number>>> {
  const small = '{"n":1}'
  const journal = JSON.stringify({ calls: Array.from({ length: 20 }, (_, i) => ({ i, result: 'x'.repeat(3_200) })) })
  const rows: Array<Record<string, string | number>> = []
  const row = (what: string, ms: number[]) => {
    const s = summarize(ms)
    rows.push({ driver: label, operation: what, 'median ms': s.median, 'p95 ms': s.p95, n: s.n })
  }
  row('put (small, unconditional)', await time(200, (i) => store.put(`k/${i % 20}`, small)))
  row('get (small)', await time(500, (i) => store.get(`k/${i % 20}`)))
  let version: string | undefined
  row(`CAS put (${(journal.length / 1024).toFixed(0)} KiB journal)`, await time(100, async () => {
    const result = await store.put('run/x/journal', journal, version === undefined ? {} : { ifVersion: version })
    version = result.version
  }))
  row('get (64 KiB)', await time(200, () => store.get('run/x/journal')))
  row('CAS conflict (stale version)', await time(200, () => store.put('run/x/journal', small, { ifVersion: 'stale' })))
  for (let i = 0; i < 1000; i++) await store.put(`index/${String(i).padStart(4, '0')}`, small)
  row('list 100 of 1,000 keys', await time(50, () => store.list('index/', { limit: 100 })))
  return rows
}

const dir = mkdtempSync(join(tmpdir(), 'toolyard-store-bench-'))
try {
  const rows = [...(await measure('memory', createMemoryStore())), ...(await measure(`file (${dir})`, createFileStore(dir)))]
  printTable(rows)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
