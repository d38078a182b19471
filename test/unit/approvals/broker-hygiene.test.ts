/**
 * A broker over a store under concurrent and hostile use (issue 31, item 5): of many
 * concurrent decisions exactly one wins and every loser hears 409
 * `APPROVAL_ALREADY_DECIDED` (never 404); a malformed open record never breaks a listing
 * (it is skipped and counted); and a run's end withdraws its pending requests before its
 * result is returned. On the memory store and on the file store.
 */
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createFileStore, createSandboxRuntime } from '../../../platforms/node/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { codeOf, listed, until } from './helpers.js'

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

async function fileStore(): Promise<{ store: DurableStore; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'toolyard-hygiene-'))
  dirs.push(dir)
  return { store: createFileStore(dir), dir }
}

const stores: [string, () => Promise<{ store: DurableStore; dir?: string }>][] = [
  ['memory store', async () => ({ store: createMemoryStore() })],
  ['file store', fileStore],
]

function setup(broker: ApprovalBroker, codeRuntime?: ReturnType<typeof createSandboxRuntime>) {
  const runtime = createToolRuntime({ approvals: broker, ...(codeRuntime === undefined ? {} : { mode: 'both', codeRuntime }) })
  const ran: string[] = []
  runtime.register(
    defineTool({
      name: 'pay',
      description: 'pays',
      parameters: { amount: { type: 'number', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => {
        ran.push(`pay ${args.amount}`)
        return 'paid'
      },
      isConcurrencySafe: () => true,
    }),
  )
  runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'pay' ? { kind: 'ask', reason: 'moves money' } : d))
  return { runtime, ran }
}

for (const [label, open] of stores) {
  describe(`over the ${label}`, () => {
    it('many concurrent decisions from several brokers: exactly one wins, every loser is 409 APPROVAL_ALREADY_DECIDED', async () => {
      const { store } = await open()
      const brokers = Array.from({ length: 4 }, () => createApprovalBroker({ store, pollIntervalMs: 20 }))
      const { runtime, ran } = setup(brokers[0]!)
      for (let round = 0; round < 5; round++) {
        const result = runtime.execute({ callId: `race-${round}`, name: 'pay', arguments: { amount: round }, signal: new AbortController().signal })
        const [request] = await listed(brokers[0]!, 1)
        const answers = await Promise.all(
          Array.from({ length: 24 }, (_, i) => brokers[i % brokers.length]!.decide(request!.id, { decision: i % 2 === 0 ? 'allow' : 'deny' })),
        )
        const winners = answers.filter((a) => a.ok)
        expect(winners).toHaveLength(1)
        const losers = answers.filter((a) => !a.ok)
        expect(losers.map((a) => (a.ok ? 'ok' : a.code))).toEqual(Array.from({ length: 23 }, () => 'APPROVAL_ALREADY_DECIDED'))
        const won = winners[0]!
        expect(codeOf(await result)).toBe(won.ok && won.decision === 'allow' ? 'OK' : 'DENIED_BY_APPROVAL')
      }
      expect(ran.length).toBeLessThanOrEqual(5)
      await runtime.dispose()
      for (const b of brokers) await b.dispose()
    })

    it('a decision that loses to one landing between its reads is 409, never 404 (the settlement is read again)', async () => {
      const { store } = await open()
      // B's second read of the open key (inside its claim) waits until A's decision has landed and removed it.
      let release: () => void = () => {}
      const landed = new Promise<void>((resolve) => (release = resolve))
      let openReads = 0
      const gated: DurableStore = {
        ...store,
        get: async (key: string) => {
          if (key.startsWith('approvals/open/') && ++openReads === 2) await landed
          return store.get(key)
        },
        put: (key, value, options) => store.put(key, value, options),
        delete: (key, options) => store.delete(key, options),
        list: (prefix, options) => store.list(prefix, options),
      }
      const a = createApprovalBroker({ store, pollIntervalMs: 20 })
      const b = createApprovalBroker({ store: gated, pollIntervalMs: 20 })
      const { runtime } = setup(a)
      const result = runtime.execute({ callId: 'between', name: 'pay', arguments: { amount: 1 }, signal: new AbortController().signal })
      const [request] = await listed(a, 1)
      openReads = 0
      const late = b.decide(request!.id, { decision: 'allow' })
      // B has read the open record and the (empty) settlement; now A decides.
      await until(() => openReads >= 2, "B's two reads", 20_000, 1)
      expect(await a.decide(request!.id, { decision: 'deny', reason: 'first' })).toMatchObject({ ok: true })
      release()
      expect(await late).toMatchObject({ ok: false, code: 'APPROVAL_ALREADY_DECIDED' })
      expect(codeOf(await result)).toBe('DENIED_BY_APPROVAL')
      await runtime.dispose()
      await a.dispose()
      await b.dispose()
    })

    it('a malformed open record never breaks the listing: it is skipped and counted', async () => {
      const { store, dir } = await open()
      const broker = createApprovalBroker({ store, pollIntervalMs: 20 })
      const { runtime } = setup(broker)
      const result = runtime.execute({ callId: 'listed', name: 'pay', arguments: { amount: 1 }, signal: new AbortController().signal })
      await listed(broker, 1)
      await store.put(`approvals/open/${'f'.repeat(32)}`, '{"format":"toolyard-approval/1","approval":{"id":1}}')
      await store.put(`approvals/open/${'e'.repeat(32)}`, 'not json at all')
      await store.put('approvals/open/not-a-hash', '{}')
      if (dir !== undefined) {
        // Stray files a person (or another program) left in the data directory.
        await mkdir(join(dir, 'approvals', 'open'), { recursive: true })
        await writeFile(join(dir, 'approvals', 'open', 'stray.txt'), 'hello')
        await mkdir(join(dir, 'approvals', 'open', 'a-directory'), { recursive: true })
      }
      const list = await broker.pending()
      expect(list.map((p) => p.callId)).toEqual(['listed'])
      expect(broker.lastListing.malformed).toBeGreaterThanOrEqual(3)
      await broker.decide(list[0]!.id, { decision: 'deny' })
      expect(codeOf(await result)).toBe('DENIED_BY_APPROVAL')
      await runtime.dispose()
      await broker.dispose()
    })

    it('a run that ends withdraws its un-awaited call\'s request before its result is returned', async () => {
      const { store } = await open()
      const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0 })
      const broker = createApprovalBroker({ store, pollIntervalMs: 20 })
      const { runtime, ran } = setup(broker, codeRuntime)
      // Resolves once the run's request is open (the program then returns, leaving its call unanswered).
      let seen: Promise<void> = Promise.resolve()
      runtime.register(
        defineTool({
          name: 'wait_listed',
          description: 'resolves once the request is listed',
          parameters: {},
          output: { schema: { type: 'string' }, render: () => [] },
          execute: async () => {
            await seen
            return 'seen'
          },
          isConcurrencySafe: () => true,
        }),
      )
      for (let i = 0; i < 3; i++) {
        const code = `void tools.pay({ amount: ${i} }).catch(() => {}); await tools.wait_listed({}); return 'left'`
        let listedNow: () => void = () => {}
        seen = new Promise<void>((resolve) => (listedNow = resolve))
        const unsubscribe = broker.subscribe((event) => {
          if (event.type === 'requested') listedNow()
        })
        const result = await runtime.execute({ callId: `leaver-${i}`, name: 'run_code', arguments: { code, description: 'leaves a request' }, signal: new AbortController().signal })
        expect(codeOf(result)).toBe('OK')
        // Returned: nothing of the run is listed any more, at once.
        expect(await broker.pending()).toEqual([])
        unsubscribe()
      }
      expect(ran).toEqual([])
      await runtime.dispose()
      await broker.dispose()
      await codeRuntime.dispose()
    })
  })
}
