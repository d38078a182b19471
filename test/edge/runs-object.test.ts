import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProductWorker, productWorkerOptions } from '../support/built-worker.js'
import { until } from '../support/poll.js'

/**
 * Durable runs at the edge: the BUILT Worker with its Durable Object bindings (`RUNS` →
 * `ToolyardRun`, one object per run; `RUN_INDEX` → `ToolyardRunIndex`, the pending
 * approvals of every run) under Miniflare's workerd, with storage persisted to a
 * directory. A run that asks waits, its approval is listed by the Worker and decided
 * there; a run parked across a restart of the whole Miniflare instance (a new workerd on
 * the same directory) is resumed by its object, finishes with the value an uninterrupted
 * run gives, and its completed call did not run again.
 */
const TOKEN = 'edge-test-token-0123456789abcdef'
const BASE = 'http://toolyard.test'
const auth = { Authorization: `Bearer ${TOKEN}` }
const jsonAuth = { ...auth, 'Content-Type': 'application/json' }

interface Approval {
  readonly id: string
  readonly name: string
  readonly parentCallId?: string
}

/**
 * Two asking calls: an edit that appends to README.md (not idempotent: run twice, the file
 * would say so), then a write; the value reads both back.
 */
const TWO_ASKS = `
const text = (file) => file.lines.map((line) => line.text).join('\\n')
const first = (await tools.read_file({ path: 'README.md' })).lines[0].text
await tools.edit_file({ path: 'README.md', oldText: first, newText: '[edited] ' + first })
await tools.write_file({ path: 'notes/run.txt', content: 'written once' })
const readme = text(await tools.read_file({ path: 'README.md' }))
return { edits: readme.split('[edited]').length - 1, notes: text(await tools.read_file({ path: 'notes/run.txt' })) }
`

/** {@link TWO_ASKS} in Python (`"language": "python"`). */
const TWO_ASKS_PYTHON = `
def text(f):
    return '\\n'.join([line['text'] for line in f['lines']])
first = (await tools.read_file({'path': 'README.md'}))['lines'][0]['text']
await tools.edit_file({'path': 'README.md', 'oldText': first, 'newText': '[edited] ' + first})
await tools.write_file({'path': 'notes/run.txt', 'content': 'written once'})
readme = text(await tools.read_file({'path': 'README.md'}))
return {'edits': len(readme.split('[edited]')) - 1, 'notes': text(await tools.read_file({'path': 'notes/run.txt'}))}
`

describe('durable runs in Durable Objects (built Worker, Miniflare, persisted storage)', () => {
  let dir: string
  let persist: string
  let mf: Miniflare | undefined

  const start = async (bindings: Record<string, string> = {}, state = persist): Promise<Miniflare> => {
    // The person's token (run + approve): these tests start runs and decide their approvals.
    const instance = new Miniflare(productWorkerOptions(dir, { TOOLYARD_APPROVER_TOKEN: TOKEN, ...bindings }, state))
    await instance.ready
    return instance
  }
  const call = (path: string, init: RequestInit = {}) => mf!.dispatchFetch(`${BASE}${path}`, init as never) as unknown as Promise<Response>
  const startRun = async (code: string, language?: 'python'): Promise<string> => {
    const response = await call('/v1/runs', { method: 'POST', headers: jsonAuth, body: JSON.stringify({ code, description: 'edge durable', ...(language === undefined ? {} : { language }) }) })
    expect(response.status).toBe(202)
    const body = (await response.json()) as { id: string; status: string }
    expect(response.headers.get('Location')).toBe(`/v1/runs/${body.id}`)
    return body.id
  }
  const status = async (id: string): Promise<Record<string, unknown>> => (await (await call(`/v1/runs/${id}`, { headers: auth })).json()) as Record<string, unknown>
  /** Polls the run's status until `done` holds (its body), failing past `withinMs`. */
  const whenStatus = (id: string, done: (body: Record<string, unknown>) => boolean, withinMs = 30_000): Promise<Record<string, unknown>> =>
    until(async () => {
      const body = await status(id)
      return done(body) ? body : undefined
    }, `run ${id}'s status`, withinMs, 50)
  /** The Worker's listing of pending approvals (from the index), this run's only. */
  const approvalsOf = async (runCallId: string): Promise<Approval[]> => {
    const response = await call('/v1/approvals', { headers: auth })
    expect(response.status).toBe(200)
    return ((await response.json()) as { approvals: Approval[] }).approvals.filter((a) => a.parentCallId === runCallId)
  }
  const decide = async (id: string, decision: 'allow' | 'deny'): Promise<Response> =>
    call(`/v1/approvals/${id}`, { method: 'POST', headers: jsonAuth, body: JSON.stringify({ decision }) })
  /**
   * A decision reaches the run's object with the request that takes it (the Worker forwards
   * it there); the object's broker would otherwise see it only at its next poll of the
   * index, 30 s later. Runs that end after a decision must end well inside that.
   */
  const AFTER_DECISION_MS = 15_000
  const ended = (id: string) => whenStatus(id, (body) => body.status !== 'running' && body.status !== 'waiting', AFTER_DECISION_MS)
  /** Waits until the run asks `name`, checks the Worker lists it, and answers it. */
  const answer = async (id: string, name: string, decision: 'allow' | 'deny' = 'allow'): Promise<void> => {
    const waiting = await whenStatus(id, (body) => body.status === 'waiting' && (body.approvals as Approval[]).some((a) => a.name === name))
    expect(waiting.status).toBe('waiting')
    const listed = await approvalsOf(waiting.callId as string)
    expect(listed.map((a) => a.name)).toEqual([name])
    expect((await decide(listed[0]!.id, decision)).status).toBe(200)
  }
  /**
   * After the edit was answered: waits until the run asks for `write_file` and its object says
   * its state is stored (it parks after parkAfterMs, 1 s), restarts workerd over the same
   * directory, and allows the write from the approval the new Worker lists. Resolves with the
   * run's end.
   */
  const allowWriteAcrossRestart = async (id: string): Promise<Record<string, unknown>> => {
    const waiting = await whenStatus(id, (body) => body.status === 'waiting' && (body.approvals as Approval[]).some((a) => a.name === 'write_file'))
    const callId = waiting.callId as string
    const stored = async () => (await call(`/v1/runs/${id}`, { headers: auth })).headers.get('X-Toolyard-Run-State') === 'stored'
    await until(stored, 'the run object to store its state', 30_000, 50)
    await mf!.dispose()
    mf = await start()
    // A new workerd: the approval is listed from the index, decided on the Worker, and the
    // object (woken by the decision) resumes the run from its journal.
    const listed = await approvalsOf(callId)
    expect(listed.map((a) => a.name)).toEqual(['write_file'])
    expect((await decide(listed[0]!.id, 'allow')).status).toBe(200)
    return ended(id)
  }

  beforeAll(async () => {
    dir = buildProductWorker('toolyard-edge-run-objects-')
    persist = join(dir, 'state')
    mf = await start()
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it('a run that asks waits (its approval listed by the Worker), and the decision finishes it with its value', async () => {
    const id = await startRun(TWO_ASKS)
    await answer(id, 'edit_file')
    await answer(id, 'write_file')
    const done = await ended(id)
    expect(done).toMatchObject({ id, status: 'done', result: { isError: false } })
    expect(done.result).toMatchObject({ value: { result: { edits: 1, notes: 'written once' } } })
    expect(await approvalsOf(done.callId as string)).toEqual([])
    // Its events, from its object, name the run by its public id.
    const events = await (await call(`/v1/runs/${id}/events`, { headers: auth })).text()
    expect([...events.matchAll(/^event: (.+)$/gm)].map((match) => match[1]).slice(-2)).toEqual(['result', 'end'])
    expect(events).toContain(`"id":"${id}"`)
    expect(events).toContain('event: approval\n')
  })

  it('two runs wait at once, each in its own object: each run lists its own approval, the Worker lists both, each decision reaches its run', async () => {
    const a = await startRun("await tools.write_file({ path: 'a.txt', content: 'a' }); return 'a'")
    const b = await startRun("await tools.write_file({ path: 'b.txt', content: 'b' }); return 'b'")
    const waitingA = await whenStatus(a, (body) => body.status === 'waiting')
    const waitingB = await whenStatus(b, (body) => body.status === 'waiting')
    const [ownA, ownB] = [waitingA.approvals as Approval[], waitingB.approvals as Approval[]]
    expect(ownA.map((x) => x.name)).toEqual(['write_file'])
    expect(ownB.map((x) => x.name)).toEqual(['write_file'])
    expect(ownA[0]!.id).not.toBe(ownB[0]!.id)
    const all = ((await (await call('/v1/approvals', { headers: auth })).json()) as { approvals: Approval[] }).approvals.map((x) => x.id)
    expect(all).toEqual(expect.arrayContaining([ownA[0]!.id, ownB[0]!.id]))
    expect((await decide(ownB[0]!.id, 'allow')).status).toBe(200)
    expect(await ended(b)).toMatchObject({ status: 'done', result: { value: { result: 'b' } } })
    expect((await status(a)).status).toBe('waiting')
    expect((await decide(ownA[0]!.id, 'deny')).status).toBe(200)
    expect((await ended(a)).status).toBe('failed')
  })

  it('a denied call fails its run, and an unknown run id is 404 RUN_NOT_FOUND (no object answers for it)', async () => {
    const id = await startRun("await tools.write_file({ path: 'x.txt', content: 'x' }); return 1")
    await answer(id, 'write_file', 'deny')
    const denied = await ended(id)
    expect(denied.status).toBe('failed')
    const unknown = await call(`/v1/runs/${crypto.randomUUID()}`, { headers: auth })
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('RUN_NOT_FOUND')
  })

  it('without the token a run request is refused by the Worker (401), before any object', async () => {
    const response = await call('/v1/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code: 'return 1', description: 'x' }) })
    expect(response.status).toBe(401)
  })

  it('a run parked across a restart of workerd (same storage directory) is resumed by its object: the decision finishes it, its completed call ran once', async () => {
    const id = await startRun(TWO_ASKS)
    // The edit is allowed and runs before the restart; the write asks and the run parks.
    await answer(id, 'edit_file')
    const done = await allowWriteAcrossRestart(id)
    expect(done).toMatchObject({ id, status: 'done', result: { isError: false } })
    // The value an uninterrupted run gives (the first test): one edit, the note written.
    expect(done.result).toMatchObject({ value: { result: { edits: 1, notes: 'written once' } } })
    // The resumed run is back in its object's run table: its event stream answers, from the resumption to the end.
    const events = await call(`/v1/runs/${id}/events`, { headers: auth })
    expect(events.status).toBe(200)
    const text = await events.text()
    expect(text).toContain('"resumed":true')
    expect(text).toContain('event: end')
  })

  it('a run whose parked state passes the 128 KiB value cap (a 150 KiB program) is stored in pieces, parks across a restart of workerd and finishes', async () => {
    // Before: the park's write was refused (STORE_VALUE_TOO_LARGE) and dropped, so the object never said `stored` and a restart lost the run.
    const id = await startRun(`const pad = '${'p'.repeat(150 * 1024)}'\n${TWO_ASKS}`)
    await answer(id, 'edit_file')
    const done = await allowWriteAcrossRestart(id)
    expect(done).toMatchObject({ id, status: 'done', result: { isError: false, value: { result: { edits: 1, notes: 'written once' } } } })
  })

  it('a Python run parked across a restart of workerd is resumed by its object in a fresh interpreter: same value, its completed call ran once', async () => {
    const id = await startRun(TWO_ASKS_PYTHON, 'python')
    await answer(id, 'edit_file')
    const done = await allowWriteAcrossRestart(id)
    expect(done).toMatchObject({ id, status: 'done', result: { isError: false, value: { result: { edits: 1, notes: 'written once' } } } })
    const text = await (await call(`/v1/runs/${id}/events`, { headers: auth })).text()
    expect(text).toContain('"resumed":true')
  })

  it('a run whose object stopped before it ever parked is reported failed (INTERRUPTED) by the next instance, not running forever', async () => {
    // A timer is not an approval: this run never parks; it is mid-flight when workerd stops.
    const id = await startRun('await new Promise((resolve) => setTimeout(resolve, 30_000)); return 1')
    expect((await status(id)).status).toBe('running')
    await mf!.dispose()
    mf = await start()
    const body = await status(id)
    expect(body).toMatchObject({ id, status: 'failed', result: { isError: true, error: { info: { code: 'INTERRUPTED' } } } })
  })

  it("an approval that expires while its run's object is down is ended by the object's alarm after the restart, before anyone asks", async () => {
    // Its own workerd and storage, with 4 s approvals.
    const timeout = { TOOLYARD_APPROVAL_TIMEOUT_MS: '4000' }
    const state = join(dir, 'state-expiry')
    await mf!.dispose()
    mf = await start(timeout, state)
    const id = await startRun("await tools.write_file({ path: 'late.txt', content: 'x' }); return 1")
    const waiting = await whenStatus(id, (body) => body.status === 'waiting')
    const expiresAt = (waiting.approvals as { expiresAt: number }[])[0]!.expiresAt
    await until(async () => (await call(`/v1/runs/${id}`, { headers: auth })).headers.get('X-Toolyard-Run-State') === 'stored', 'the run object to store its state', 30_000, 50)
    await mf!.dispose()
    // Down past the expiry (and the alarm's 1 s slack after it), then up again on the same storage.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt + 1_500 - Date.now())))
    mf = await start(timeout, state)
    // Nobody calls the run's object now: only its alarm can resume the run and end it.
    await new Promise((resolve) => setTimeout(resolve, 5_000))
    const askedAt = Date.now()
    const body = await status(id)
    expect(body).toMatchObject({ id, status: 'failed', result: { isError: true } })
    expect(body.settledAt as number).toBeLessThan(askedAt)
    expect(JSON.stringify(body.result)).toContain("write_file was denied by timeout")
  })
})
