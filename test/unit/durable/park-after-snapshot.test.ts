/**
 * A park never lands before the event snapshot of the frames its run had when it parked:
 * a process killed right after the park shows the next process every frame from before it.
 * The park's record write (`DurableRuns`, the run's write queue) waits for the run's table's
 * snapshot writes (`RunService.queue`), which ran apart from it: under load the snapshot asked
 * for at the `approval` frame could land after the park asked for a second later, and a kill
 * between the two left the next process with a `gap` from id 1 (the kill -9 walkthrough of
 * docs/durability.md on a busy machine).
 *
 * The kill is a copy of what had landed in the store at the moment the park landed (the disk
 * of a process SIGKILLed then); process B resumes the run from that copy. One store write is
 * held meanwhile: released when the park lands (what happened before the fix: the park went
 * first) or, once the park was asked for, after a while (the fix: the park waits for it).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { RUN_EVENTS_PREFIX } from '../../../src/durable/run-table.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { AUTH, JSON_AUTH, TOKEN, sseFrames } from '../http/fixtures.js'
import type { SseFrame } from '../http/fixtures.js'
import { registerAskingPay } from '../../support/pay-fixture.js'
import { until } from '../../support/poll.js'

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined)
})

/** How long a held write stays held once the park was asked for (the fixed park waits that long for it). */
const HELD_AFTER_PARK_MS = 400

/**
 * `inner` with what has landed in it tracked (the "disk"), the order in which snapshots and
 * parks landed, and one write held: the first put whose key starts with `hold`, until the
 * park lands or {@link HELD_AFTER_PARK_MS} after `parkAsked()`.
 */
function killableStore(inner: DurableStore, hold: string) {
  const disk = new Map<string, string>()
  const landed: string[] = []
  let killed: Map<string, string> | undefined
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let holding = false
  let held = false
  const store: DurableStore = {
    get: (key) => inner.get(key),
    list: (prefix, options) => inner.list(prefix, options),
    async put(key, value, options) {
      if (!held && key.startsWith(hold)) {
        held = holding = true
        await released
        holding = false
      }
      const put = await inner.put(key, value, options)
      if (!put.ok) return put
      disk.set(key, value)
      // A snapshot's manifest (`run-events/<id>`, not a piece) says up to which frame; a run's record with `park` is a park.
      if (key.startsWith(RUN_EVENTS_PREFIX) && !key.slice(RUN_EVENTS_PREFIX.length).includes('/')) landed.push(`snapshot ${(JSON.parse(value) as { last: number }).last}`)
      if (key.startsWith('runs/') && (JSON.parse(value) as { park?: unknown }).park !== undefined) {
        landed.push('park')
        // SIGKILL now: what the next process finds is what has landed so far.
        killed ??= new Map(disk)
        release()
      }
      return put
    },
    async delete(key, options) {
      const gone = await inner.delete(key, options)
      if (gone.ok) disk.delete(key)
      return gone
    },
  }
  return {
    store,
    landed,
    /** The park was asked for: a held write goes on after a while (the fix waits for it). */
    parkAsked: () => void setTimeout(release, HELD_AFTER_PARK_MS),
    /** Whether the held write was still held when the park was asked for. */
    holding: () => holding,
    /** The store as the park left it, for the next process. */
    async afterKill(): Promise<DurableStore> {
      if (killed === undefined) throw new Error('the run has not parked')
      const copy = createMemoryStore()
      for (const [key, value] of killed) await copy.put(key, value)
      return copy
    },
  }
}

/** `runtime`, with `onPark` heard before each park of its runs goes to the store. */
function hearingParks(runtime: CodeRuntime, onPark: () => void): CodeRuntime {
  return {
    language: runtime.language,
    isolation: runtime.isolation,
    capabilities: runtime.capabilities,
    run: (request) => {
      const durable = request.durable
      const park = durable?.onPark
      if (durable === undefined || park === undefined) return runtime.run(request)
      return runtime.run({ ...request, durable: { ...durable, onPark: (state) => (onPark(), park(state)) } })
    },
    dispose: () => runtime.dispose(),
    ...(runtime.load === undefined ? {} : { load: () => runtime.load!() }),
  }
}

/** One "process" on `store`: the npm start wiring (see run-events-restart.test.ts), parking after `parkAfterMs`. */
function processOn(store: DurableStore, parkAfterMs: number, onPark: () => void = () => {}) {
  const sandbox = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs })
  const approvals = createApprovalBroker({ store })
  const runtime = createToolRuntime({ mode: 'both', codeRuntime: hearingParks(sandbox, onPark), approvals, store, runs: { resumeEveryMs: 0 } })
  runtime.register(
    defineTool({
      name: 'note',
      description: 'Returns its text.',
      parameters: { text: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => args.text,
    }),
  )
  registerAskingPay(runtime)
  const stopping = new AbortController()
  const app = createToolsApp(runtime, { token: TOKEN, signal: stopping.signal })
  const shutdown = async (): Promise<void> => {
    await runtime.dispose()
    stopping.abort(new DOMException('the server is shutting down', 'AbortError'))
    await sandbox.dispose()
    await approvals.dispose()
  }
  cleanups.push(shutdown)
  return { app, runtime, shutdown }
}

async function readUntil(stream: ReturnType<typeof sseFrames>, stop: (frame: SseFrame) => boolean): Promise<SseFrame[]> {
  const frames: SseFrame[] = []
  for (;;) {
    const frame = await stream.next()
    if (frame === undefined) return frames
    frames.push(frame)
    if (stop(frame)) return frames
  }
}

const PROGRAM = `const a = await tools.note({ text: 'before' })\nreturn await tools.pay({ cents: 500 })`

describe('a park lands after the event snapshot of its run’s frames', () => {
  it.each([
    // Asked at the approval frame (id 5), before the park, and slow: it used to land after the park.
    ['the snapshot asked for at the approval is slow to land', RUN_EVENTS_PREFIX, 1_000, 5],
    // The park timer starts when the call begins to wait, the approval frame once the request is in the store:
    // a request slower to write than parkAfterMs parks the run before its approval frame (id 5); the table snapshots at the park.
    ['the request’s own write is slower than parkAfterMs (the park comes before the approval frame)', 'approvals/open/', 30, 4],
  ])('%s: a kill right after the park still shows every frame from before it', async (_name, hold, parkAfterMs, kept) => {
    const disk = killableStore(createMemoryStore(), hold)
    const a = processOn(disk.store, parkAfterMs, () => disk.parkAsked())
    const started = await a.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: PROGRAM, description: 'pays' }) })
    const { id } = (await started.json()) as { id: string }
    const seen = sseFrames(await a.app.request(`/v1/runs/${id}/events`, { headers: AUTH }))
    const before = await readUntil(seen, (frame) => frame.event === 'approval')
    expect(before.map((frame) => frame.event)).toEqual(['start', 'dispatch-start', 'dispatch', 'dispatch-start', 'approval'])
    // Killed as the park lands (A's later writes reach the live store, not the copy B starts from).
    await until(() => (disk.landed.includes('park') ? true : undefined), 'the park')
    await a.shutdown()
    // The last snapshot before the park holds every frame the run had when it parked.
    const parkAt = disk.landed.indexOf('park')
    expect(disk.landed.slice(0, parkAt).at(-1)).toBe(`snapshot ${kept}`)

    const b = processOn(await disk.afterKill(), parkAfterMs)
    expect((await b.runtime.runs.resume({ staleMs: 0 })).adopted).toBe(1)
    const frames = await readUntil(sseFrames(await b.app.request(`/v1/runs/${id}/events`, { headers: AUTH })), (frame) => frame.event === 'resumed')
    // Every frame from before the park, under its id, then `resumed` (after the ids A had reserved).
    expect(frames.slice(0, kept)).toEqual(before.slice(0, kept))
    expect(frames.slice(kept).map((frame) => frame.event)).toEqual(['gap', 'resumed'])
    expect(frames[kept]!.data).toMatchObject({ code: 'EVENT_IDS_RESERVED', first: kept + 1 })
    await b.shutdown()
  }, 60_000)
})
