/**
 * One run's record at the edge's value cap (issue 38 leftovers): the Durable Object store
 * refuses a value over 128 KiB, and a parked run's record carries its whole parked state
 * (program, journal, logs, waiting calls' arguments), which a hostile program makes as large
 * as it likes. Such a park is spilled into pieces (`run-parks/`) and the run still parks,
 * resumes in another process and finishes. The driver is the edge's own, over a Map.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it } from 'vitest'
import { createDurableObjectStore, DEFAULT_DURABLE_OBJECT_MAX_VALUE_BYTES } from '../../../platforms/edge/durable-object-store.js'
import { mapStorage } from '../../support/map-storage.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { DurableRuns, readStoredRun, type StoredRun } from '../../../src/durable/runs.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ApprovalHandler, ToolExecutionResult } from '../../../src/types.js'
import { utf8Length } from '../../../src/util/utf8.js'
import { until } from '../../support/poll.js'
import { AUTH, JSON_AUTH, askingPayTool, createFixture } from '../http/fixtures.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const CAP = DEFAULT_DURABLE_OBJECT_MAX_VALUE_BYTES

const disposers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposers.splice(0)) await dispose()
})

/** The edge store, noting the UTF-8 size of every value offered for `runs/` and whether it was refused. */
function measuredStore() {
  const store = createDurableObjectStore(mapStorage())
  const offered: { readonly bytes: number; readonly refused: string | undefined }[] = []
  const measured: DurableStore = {
    ...store,
    async put(key, value, options) {
      if (!key.startsWith('runs/')) return store.put(key, value, options)
      try {
        const put = await store.put(key, value, options)
        offered.push({ bytes: utf8Length(value), refused: undefined })
        return put
      } catch (error) {
        offered.push({ bytes: utf8Length(value), refused: (error as { code?: string }).code })
        throw error
      }
    },
  }
  return { store: measured, offered }
}

/** One "process": a runtime over `store` with the edge's inline QuickJS, a tool that fails with a long message, and `pay`, which waits for a person. */
function processOn(store: DurableStore, approval: ApprovalHandler) {
  const codeRuntime = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 120_000, wasmModule, parkAfterMs: 30, maxLogBytes: 64 * 1024 })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval })
  disposers.push(() => runtime.dispose(), () => codeRuntime.dispose())
  const paid: number[] = []
  runtime.register(
    defineTool({
      name: 'fail',
      description: 'Fails with a long message.',
      parameters: { i: { type: 'number', required: true } },
      output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: async (args) => {
        throw new Error(`refused ${args.i}: ${'e'.repeat(4000)}`)
      },
    }),
  )
  runtime.register(
    defineTool({
      name: 'pay',
      description: 'Pays (a person approves first).',
      parameters: { cents: { type: 'number', required: true }, memo: { type: 'string', required: true } },
      // Safe to overlap, so several calls wait for a person at once (a state-changing tool's calls ask one by one).
      isConcurrencySafe: () => true,
      output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: async (args) => {
        paid.push(args.cents)
        return args.cents
      },
    }),
  )
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  return { runtime, paid }
}

function manualApprovals() {
  const asked: { callId: string; decide: (allow: boolean) => void }[] = []
  const handler: ApprovalHandler = (request) => new Promise<boolean>((resolve) => asked.push({ callId: request.execution.callId, decide: resolve }))
  return { asked, handler }
}

/**
 * What a hostile client sends: a long program (a 96 KiB string literal, 4 KiB of
 * non-ASCII), 20 caught failures with 4 KiB messages (each enters the journal), 64 KiB of
 * logs, then 8 parked calls at once, each with a 16 KiB argument.
 */
const PARKED_CALLS = 8
const PROGRAM = `
  const pad = '${'p'.repeat(96 * 1024)}${'é'.repeat(4 * 1024)}'
  const caught = []
  for (let i = 0; i < 20; i++) { try { await tools.fail({ i }) } catch (e) { caught.push(e.message.length) } }
  for (let i = 0; i < 80; i++) console.log('${'l'.repeat(1000)}')
  const paid = await Promise.all(Array.from({ length: ${PARKED_CALLS} }, (_, i) => tools.pay({ cents: i + 1, memo: String(i).repeat(16 * 1024) })))
  return { pad: pad.length, caught: caught.length, paid }
`

async function keys(store: DurableStore, prefix: string): Promise<string[]> {
  return (await store.list(prefix, { limit: 1000 })).entries.map((e) => e.key)
}

describe('a parked run whose record would pass the edge store’s 128 KiB cap', () => {
  it('still parks, is resumed by another process on the same store and finishes; its park lives in pieces, and nothing is left after', async () => {
    const { store, offered } = measuredStore()
    const first = manualApprovals()
    const a = processOn(store, first.handler)
    let early: ToolExecutionResult | undefined
    void a.runtime.execute({ callId: 'big', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal }).then((r) => (early = r))
    await until(() => first.asked.length > 0 || early !== undefined, 'a call to ask', 60_000)
    expect(early).toBeUndefined()
    // Parked in the store: before the fix the park's write was refused (STORE_VALUE_TOO_LARGE) and lost without a word.
    await until(async () => await a.runtime.runs.parked('big'), () => `the run to be parked in the store (writes offered: ${JSON.stringify(offered)})`, 60_000)
    const inline = Math.max(...offered.map((o) => o.bytes))
    expect(inline).toBeGreaterThan(CAP)
    expect(offered.find((o) => o.bytes === inline)?.refused).toBe('STORE_VALUE_TOO_LARGE')
    const record = (await readStoredRun((await store.get('runs/big'))!.value)) as StoredRun
    expect(record.park).toBeUndefined()
    expect(record.parkPieces).toMatchObject({ pieces: expect.any(Number), bytes: expect.any(Number) })
    expect(utf8Length((await store.get('runs/big'))!.value)).toBeLessThan(1024)
    expect((await keys(store, 'run-parks/big/')).length).toBe(record.parkPieces!.pieces)
    expect(record.parkPieces!.pieces).toBeGreaterThan(1)
    // Figures for docs/durability.md.
    console.info(`inline record ${inline} B (cap ${CAP}); spilled: record ${utf8Length((await store.get('runs/big'))!.value)} B + ${record.parkPieces!.pieces} pieces, ${record.parkPieces!.bytes} B`)

    // Process A "dies"; B resumes the run from the pieces, the calls ask again under their ids.
    const second = manualApprovals()
    const b = processOn(store, second.handler)
    const resumed = await b.runtime.resumeRuns({ staleMs: 0 })
    expect(resumed.map((r) => r.callId)).toEqual(['big'])
    await until(() => second.asked.length > 0, 'a call to ask again', 60_000)
    expect(second.asked[0]!.callId).toBe(first.asked[0]!.callId)
    // The calls ask one after the other: each is allowed as it asks.
    let decided = 0
    let ended: ToolExecutionResult | undefined
    void resumed[0]!.result.then((r) => (ended = r as ToolExecutionResult))
    await until(() => {
      while (decided < second.asked.length) second.asked[decided++]!.decide(true)
      return ended !== undefined
    }, () => `the run to end (${decided} calls allowed)`, 120_000)
    expect(decided).toBe(PARKED_CALLS)
    const result = ended!
    expect(result.isError, result.isError ? result.error.message : '').toBe(false)
    expect((result as { value: { result?: unknown } }).value.result).toEqual({ pad: 100 * 1024, caught: 20, paid: [1, 2, 3, 4, 5, 6, 7, 8] })
    expect(b.paid.sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(a.paid).toEqual([])
    await until(async () => (await keys(store, 'runs/')).length === 0 && (await keys(store, 'run-parks/')).length === 0 && (await keys(store, 'calls/')).length === 0, 'the run’s keys to go')
  }, 180_000)
})

describe('a /v1/runs run whose park is spilled', () => {
  it('keeps one generation of pieces across parks, its view writes keep them, and its end leaves the view without park or pieces', async () => {
    const { store, offered } = measuredStore()
    const broker = createApprovalBroker()
    const codeRuntime = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 120_000, wasmModule, parkAfterMs: 30 })
    const f = createFixture({ mode: 'both', codeRuntime, approvals: broker, store, runs: { resumeEveryMs: 0 } })
    disposers.push(() => f.runtime.dispose(), () => codeRuntime.dispose())
    f.runtime.register(askingPayTool())
    f.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
    const code = `const pad = '${'q'.repeat(160 * 1024)}'\nconst a = await tools.pay({ cents: 1 })\nconst b = await tools.pay({ cents: 2 })\nreturn pad.length`
    const response = await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code, description: 'd' }) })
    expect(response.status, await response.clone().text()).toBe(202)
    const { id, callId } = (await response.json()) as { id: string; callId: string }
    const key = `runs/${callId}`
    const spilled = async () => {
      const record = await readStoredRun((await store.get(key))?.value ?? '')
      return record?.parkPieces !== undefined && record.view !== undefined && record
    }
    const status = async () => ((await (await f.app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as { status: string }).status
    const first = await until(spilled, () => `the first park to be spilled (writes offered: ${JSON.stringify(offered.slice(-4))})`, 60_000)
    // The view says `waiting` once the approval frame reaches the table, which a loaded machine can let land after the park (CI saw `running` here).
    await until(async () => (await status()) === 'waiting', 'the run to show waiting')
    expect(await f.runtime.runs.parked(callId)).toBe(true)
    expect((await keys(store, `run-parks/${callId}/`)).length).toBe(first.parkPieces!.pieces)
    expect((await broker.decide((await broker.pending())[0]!.id, { decision: 'allow' })).ok).toBe(true)
    // Parked again: a new generation, and the first one's pieces are gone.
    const second = await until(async () => {
      const record = await spilled()
      return record !== false && record.parkPieces!.gen !== first.parkPieces!.gen && (await broker.pending()).length === 1 && record
    }, 'the second park to be spilled', 60_000)
    await until(async () => (await keys(store, 'run-parks/')).every((k) => k.startsWith(`run-parks/${callId}/${second.parkPieces!.gen}.`)), 'the first generation to go')
    expect((await keys(store, 'run-parks/')).length).toBe(second.parkPieces!.pieces)
    expect((await broker.decide((await broker.pending())[0]!.id, { decision: 'allow' })).ok).toBe(true)
    await until(async () => (await status()) === 'done', 'the run to end', 60_000)
    await until(async () => (await keys(store, 'run-parks/')).length === 0, 'the pieces to go')
    const ended = (await readStoredRun((await store.get(key))!.value))!
    expect(ended.park).toBeUndefined()
    expect(ended.parkPieces).toBeUndefined()
    expect(ended.view?.status).toBe('done')
  }, 180_000)
})

describe('the largest record once a park can spill', () => {
  it('every field but the view’s result is bounded: the worst a client can choose is under 2.5 KiB of the 128 KiB cap', async () => {
    const { store, offered } = measuredStore()
    const runs = new DurableRuns(store)
    disposers.push(async () => runs.close())
    const callId = `http-run-${crypto.randomUUID()}`
    // An agent is 1–256 UTF-16 units (HTTP's bound); a control character is 6 bytes of JSON. A principal is at most 64 of [A-Za-z0-9_-].
    const meta = { agent: '\u0001'.repeat(256), principal: 'p'.repeat(64) }
    const big = 1e12
    const view = { id: callId.slice('http-run-'.length), status: 'cancelled' as const, createdAt: 9_999_999_999_999, settledAt: 9_999_999_999_999, asked: true as const, events: { first: big, last: big, dropped: big, next: big } }
    const run = runs.forRun(callId, meta.agent, { code: 'x'.repeat(200 * 1024), description: 'd'.repeat(64 * 1024) }, meta.principal, { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, tracestate: 'v='.padEnd(512, 'x') })
    expect(await runs.writeView(callId, meta, view)).toBe(true)
    run.onPark(parkedState('pay'), FIRST_CALL_NUMBERING)
    await runs.flushed()
    const record = (await readStoredRun((await store.get(`runs/${callId}`))!.value))!
    expect(record.parkPieces).toBeDefined()
    const largest = utf8Length((await store.get(`runs/${callId}`))!.value)
    console.info(`largest record without a park inline or a result: ${largest} B of ${CAP} (${((100 * largest) / CAP).toFixed(2)} %); offered inline first: ${Math.max(...offered.map((o) => o.bytes))} B`)
    expect(largest).toBeLessThan(2.5 * 1024)
  })
})
