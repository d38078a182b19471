/**
 * The broker's openings, one principal at a time and host calls side by side (mutation
 * testing, stop 55: `oneAtATime` in _store-broker.ts, the principal test in _store-wait.ts).
 *
 * A principal's openings in one broker count the store's keys one at a time, so two of them
 * never both read the same count: with 198 of its requests opened by another server, a broker
 * asked three times lets two more open (200) and denies the third, even when the third asks
 * while the second is still counting. Were the queue's entry dropped when an earlier opening
 * settled, whoever held it, the third would count beside the second: 201 open (that mutant
 * survived every test before). A host call (no principal) counts nothing, so it waits for no
 * other: one whose store write hangs does not hold another's request back.
 */
import { setMaxListeners } from 'node:events'
import { afterEach, describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker } from '../../../src/approvals/index.js'
import { MAX_WAITING_PER_PRINCIPAL } from '../../../src/approvals/_store-broker.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { until } from '../../support/poll.js'

const open: ApprovalBroker[] = []
const controllers: AbortController[] = []
/** Held stores' release-all: a failing case must not leave the brokers' disposal waiting on a held call. */
const held: Array<() => void> = []
afterEach(async () => {
  for (const release of held.splice(0)) release()
  for (const controller of controllers.splice(0)) controller.abort()
  for (const broker of open.splice(0)) await broker.dispose()
})

function signal(): AbortSignal {
  const controller = new AbortController()
  setMaxListeners(0, controller.signal)
  controllers.push(controller)
  return controller.signal
}

/** A call's answer: 'allowed', or the denial's message. */
function ask(broker: ApprovalBroker, callId: string, cents: number, principal: string | undefined, on: AbortSignal): Promise<string> {
  const execution = { callId, name: 'pay', arguments: { cents }, signal: on, ...(principal === undefined ? {} : { principal }) }
  return Promise.resolve(broker.handler({ execution } as never)).then(
    () => 'allowed',
    (error: Error) => error.message,
  )
}

/** A real memory store whose chosen calls wait until the test lets each through. */
function heldStore(inner: DurableStore, holds: (method: 'list' | 'put', key: string) => boolean) {
  const waiting: Array<() => void> = []
  let reads = 0
  let passing = false
  const hold = (): Promise<void> => (passing ? Promise.resolve() : new Promise((resolve) => waiting.push(resolve)))
  held.push(() => {
    passing = true
    for (const resolve of waiting.splice(0)) resolve()
  })
  const store: DurableStore = {
    get: (key) => {
      if (key.startsWith('approvals/open/')) reads++
      return inner.get(key)
    },
    delete: (key, options) => inner.delete(key, options),
    put: async (key, value, options) => {
      if (holds('put', key)) await hold()
      return inner.put(key, value, options)
    },
    list: async (prefix, options) => {
      if (holds('list', prefix)) await hold()
      return inner.list(prefix, options)
    },
  }
  return { store, waiting: () => waiting.length, reads: () => reads, release: () => waiting.shift()?.() }
}

const COUNT = 'approvals/by/agent/'

describe('a broker opens one principal’s requests one at a time', () => {
  it(`${MAX_WAITING_PER_PRINCIPAL - 2} open elsewhere; three asks, the third while the second counts: two open, the third is denied`, async () => {
    const memory = createMemoryStore()
    const elsewhere = createApprovalBroker({ store: memory, pollIntervalMs: 20 })
    open.push(elsewhere)
    const on = signal()
    const filled = Array.from({ length: MAX_WAITING_PER_PRINCIPAL - 2 }, (_, i) => ask(elsewhere, `fill-${i}`, i, 'agent', on))
    await until(async () => (await memory.list(COUNT, { limit: 1000 })).entries.length === MAX_WAITING_PER_PRINCIPAL - 2, 'the other server’s requests')
    let counting = false
    const gate = heldStore(memory, (method, key) => counting && method === 'list' && key === COUNT)
    // It never polls during the test: the only open-record reads it makes are its calls' own.
    const here = createApprovalBroker({ store: gate.store, pollIntervalMs: 600_000 })
    open.push(here)
    counting = true
    const first = ask(here, 'here-1', 10_001, 'agent', on)
    const second = ask(here, 'here-2', 10_002, 'agent', on)
    await until(() => gate.waiting() === 1, 'the first count')
    gate.release()
    // The first opens (199); the second counts next, and is held there.
    await until(async () => (await memory.list(COUNT, { limit: 1000 })).entries.length === MAX_WAITING_PER_PRINCIPAL - 1, 'the first request')
    await until(() => gate.waiting() === 1, 'the second count')
    const readsBefore = gate.reads()
    const third = ask(here, 'here-3', 10_003, 'agent', on)
    // The third has read its call's open record: what is left before its count is no I/O.
    // A macrotask later it counts beside the second, or it waits (it must).
    await until(() => gate.reads() > readsBefore, 'the third call’s open-record read')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(gate.waiting()).toBe(1)
    counting = false
    while (gate.waiting() > 0) gate.release()
    expect(await third).toBe(`pay was not put to a person: principal agent already has ${MAX_WAITING_PER_PRINCIPAL} requests waiting for one in the approval store, across every server sharing it (at most ${MAX_WAITING_PER_PRINCIPAL}); retry once some are decided`)
    expect((await memory.list(COUNT, { limit: 1000 })).entries).toHaveLength(MAX_WAITING_PER_PRINCIPAL)
    for (const controller of controllers.splice(0)) controller.abort()
    expect(await first).not.toBe('allowed')
    expect(await second).not.toBe('allowed')
    await Promise.all(filled)
  }, 60_000)

  it('host calls (no principal) wait for no other: one whose open write hangs does not hold back another’s request', async () => {
    const memory = createMemoryStore()
    let firstOpen = true
    const gate = heldStore(memory, (method, key) => {
      if (method !== 'put' || !key.startsWith('approvals/open/') || !firstOpen) return false
      firstOpen = false
      return true
    })
    const broker = createApprovalBroker({ store: gate.store, pollIntervalMs: 20 })
    open.push(broker)
    const requested: string[] = []
    broker.subscribe((event) => {
      if (event.type === 'requested') requested.push(event.approval.callId)
    })
    const on = signal()
    const stuck = ask(broker, 'host-1', 1, undefined, on)
    await until(() => gate.waiting() === 1, 'the first call’s open write')
    const other = ask(broker, 'host-2', 2, undefined, on)
    // Before: the second call's opening waited behind the first call's hung write.
    await until(() => requested.includes('host-2'), () => `host-2's request while host-1's write hangs (requested: ${JSON.stringify(requested)})`, 5_000)
    expect(requested).toEqual(['host-2'])
    gate.release()
    await until(() => requested.includes('host-1'), 'host-1’s request once its write goes through')
    for (const controller of controllers.splice(0)) controller.abort()
    expect(await stuck).not.toBe('allowed')
    expect(await other).not.toBe('allowed')
  })
})
