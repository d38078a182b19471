/**
 * The crash test of durable runs (issue 21): the `npm start` server runs in a child
 * process on a data directory (a file store); a run that waits for a person is killed
 * with SIGKILL; a new process on the same directory lists the approval, takes the
 * decision and finishes the run with the value an uninterrupted run gives, and the side
 * effects (the workspace file each call edits) show every completed call ran once.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startServer } from '../../../examples/start.js'
import { createFileStore } from '../../../platforms/node/index.js'
import { sseFrames, type SseFrame } from '../http/fixtures.js'
import { until } from '../../support/poll.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const base = mkdtempSync(join(tmpdir(), 'toolyard-crash-'))
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
  rmSync(base, { recursive: true, force: true })
})

const TOKEN = 'crash-test-token-0123456789abcdef'
const AUTH = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }

/** Each call edits one file: a call that ran twice would leave its line twice. */
const PROGRAM = `
await tools.write_file({ path: 'crash/log.md', content: 'start\\n' })
await tools.edit_file({ path: 'crash/log.md', oldText: 'start\\n', newText: 'start\\none\\n' })
await tools.edit_file({ path: 'crash/log.md', oldText: 'one\\n', newText: 'one\\ntwo\\n' })
const text = await tools.read_file({ path: 'crash/log.md' })
return { text, stamp: typeof Date.now() }
`

async function server(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/durable/server-child.ts', dataDir, TOKEN], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const url = await until(() => {
    const line = out.split('\n').find((l) => l.startsWith('{"url"'))
    return line === undefined ? undefined : (JSON.parse(line) as { url: string }).url
  }, `the server to start (${err.slice(-400)})`)
  return { url, child }
}

type Approval = { id: string; name: string; callId: string }
const approvals = async (url: string): Promise<Approval[]> => ((await (await fetch(`${url}/v1/approvals`, { headers: AUTH })).json()) as { approvals: Approval[] }).approvals
const decide = async (url: string, id: string) => {
  const response = await fetch(`${url}/v1/approvals/${id}`, { method: 'POST', headers: AUTH, body: JSON.stringify({ decision: 'allow' }) })
  expect(response.status).toBe(200)
}
/** Allows the approval of the `n`th asking call of the run (1-based) once it is listed, and returns its id. */
async function allowCall(url: string, callSuffix: string): Promise<string> {
  const approval = await until(async () => (await approvals(url)).find((a) => a.callId.endsWith(callSuffix)), `the approval of ${callSuffix}`)
  await decide(url, approval.id)
  return approval.id
}
const runStatus = async (url: string, id: string) => (await (await fetch(`${url}/v1/runs/${id}`, { headers: AUTH })).json()) as { status: string; result?: { isError: boolean; value?: { result?: unknown } } }

describe('a durable run survives kill -9 (npm start on a file store, real processes)', () => {
  it('a run parked while it waits is resumed by a new process on the same directory, with the value an uninterrupted run gives and each effect once', async () => {
    // The uninterrupted run, for the value to compare with.
    const calm = await server(join(base, 'calm'))
    const calmStart = (await (await fetch(`${calm.url}/v1/runs`, { method: 'POST', headers: AUTH, body: JSON.stringify({ code: PROGRAM, description: 'baseline' }) })).json()) as { id: string }
    for (const n of [':code:1', ':code:2', ':code:3']) await allowCall(calm.url, n)
    const calmDone = await until(async () => {
      const run = await runStatus(calm.url, calmStart.id)
      return run.status === 'done' ? run : undefined
    }, 'the baseline run')
    calm.child.kill('SIGKILL')

    const dataDir = join(base, 'crash')
    const first = await server(dataDir)
    const started = (await (await fetch(`${first.url}/v1/runs`, { method: 'POST', headers: AUTH, body: JSON.stringify({ code: PROGRAM, description: 'crash' }) })).json()) as { id: string }
    await allowCall(first.url, ':code:1')
    await allowCall(first.url, ':code:2')
    // The third call waits for a person: the run parks (its state goes to the store); then the process dies.
    const waiting = await until(async () => (await approvals(first.url)).find((a) => a.callId.endsWith(':code:3')), 'the third approval')
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    first.child.kill('SIGKILL')
    await new Promise((resolve) => first.child.once('exit', resolve))

    const second = await server(dataDir)
    // The new process lists the same request (re-attached by call id), takes the decision, and the run finishes.
    const listed = await until(async () => (await approvals(second.url)).find((a) => a.callId.endsWith(':code:3')), 'the request in the new process')
    expect(listed.id).toBe(waiting.id)
    await decide(second.url, listed.id)
    const done = await until(async () => {
      const run = await runStatus(second.url, started.id)
      return run.status === 'done' || run.status === 'failed' ? run : undefined
    }, 'the resumed run to end')
    expect(done.status).toBe('done')
    expect(done.result?.value?.result).toEqual(calmDone.result?.value?.result)
    // Each edit ran once: the file holds each line once.
    const text = JSON.stringify(done.result?.value?.result)
    expect(text.match(/start/g)).toHaveLength(1)
    expect(text.match(/one/g)).toHaveLength(1)
    expect(text.match(/two/g)).toHaveLength(1)
  }, 240_000)

  it('a run killed before it ever parked is reported failed with INTERRUPTED by the next process, not running forever', async () => {
    const dataDir = join(base, 'lost')
    const first = await server(dataDir)
    const started = (await (await fetch(`${first.url}/v1/runs`, { method: 'POST', headers: AUTH, body: JSON.stringify({ code: 'await new Promise((resolve) => setTimeout(resolve, 40_000))\nreturn 1', description: 'sleeps' }) })).json()) as { id: string }
    expect((await runStatus(first.url, started.id)).status).toBe('running')
    // The record is written just after the 202: killed before that, there would be nothing to report.
    const files = createFileStore(dataDir)
    await until(async () => ((await createStoreRunRecords(files).get(started.id)) === undefined ? undefined : true), 'the run record on disk')
    first.child.kill('SIGKILL')
    await new Promise((resolve) => first.child.once('exit', resolve))
    const second = await server(dataDir)
    // Its heartbeat goes stale after resumeStaleMs (1 s here); the next sweep ends the record.
    const ended = await until(async () => {
      const run = await runStatus(second.url, started.id)
      return run.status === 'running' ? undefined : run
    }, 'the lost run to be ended')
    expect(ended.status).toBe('failed')
    expect((ended.result as { error?: { info?: { code?: string } } } | undefined)?.error?.info?.code).toBe('INTERRUPTED')
  }, 120_000)

  it('a graceful shutdown (Ctrl+C) keeps a parked run for the next process: same request, the run ends there', async () => {
    const dataDir = join(base, 'graceful')
    const options = { port: 0, token: TOKEN, staticDir: null, dataDir, resumeStaleMs: 0, resumeEveryMs: 200 } as const
    const first = await startServer(options)
    const started = (await (await fetch(`${first.url}/v1/runs`, { method: 'POST', headers: AUTH, body: JSON.stringify({ code: PROGRAM, description: 'graceful' }) })).json()) as { id: string }
    await allowCall(first.url, ':code:1')
    const waiting = await until(async () => (await approvals(first.url)).find((a) => a.callId.endsWith(':code:2')), 'the second approval')
    await until(() => (first.codeRuntime.load().parked === 1 ? true : undefined), 'the run to park')
    await first.shutdown()
    const second = await startServer(options)
    try {
      const listed = await until(async () => (await approvals(second.url)).find((a) => a.callId.endsWith(':code:2')), 'the request after the restart')
      expect(listed.id).toBe(waiting.id)
      await decide(second.url, listed.id)
      await allowCall(second.url, ':code:3')
      const done = await until(async () => {
        const run = await runStatus(second.url, started.id)
        return run.status === 'done' || run.status === 'failed' ? run : undefined
      }, 'the run to end in the new process')
      expect(done.status, JSON.stringify(done)).toBe('done')
      expect(JSON.stringify(done.result?.value?.result).match(/one/g)).toHaveLength(1)
    } finally {
      await second.shutdown()
    }
  }, 120_000)

  it("a run's events from before the kill are readable from the new process under the same ids, then resumed, then the rest to end", async () => {
    const dataDir = join(base, 'events')
    const first = await server(dataDir)
    const program = "console.log('before')\nconst files = await tools.list_files({})\nawait tools.write_file({ path: 'kill/events.md', content: 'x' })\nreturn files.total"
    const started = (await (await fetch(`${first.url}/v1/runs`, { method: 'POST', headers: AUTH, body: JSON.stringify({ code: program, description: 'events' }) })).json()) as { id: string }
    const live = sseFrames(await fetch(`${first.url}/v1/runs/${started.id}/events`, { headers: AUTH }))
    const approval = await live.until('approval')
    const before = [...live.seen]
    expect(before.map((f) => f.event)).toEqual(['start', 'log', 'dispatch-start', 'dispatch', 'dispatch-start', 'approval'])
    // Parked, and its frames in the store: then the process dies.
    const files = createFileStore(dataDir)
    await until(async () => ((await Promise.all((await files.list('runs/')).entries.map(async (e) => (JSON.parse((await files.get(e.key))?.value ?? '{}') as { park?: unknown }).park !== undefined))).filter(Boolean).length === 1 && (await files.get(`run-events/${started.id}`)) !== undefined ? true : undefined), 'the parked run and its events on disk')
    await live.cancel()
    first.child.kill('SIGKILL')
    await new Promise((resolve) => first.child.once('exit', resolve))

    const second = await server(dataDir)
    // Answered at once: from the stored snapshot while the new process has not adopted the run yet, else from
    // its own buffer; either way a gap frame says the dead process's reserved ids were reserved.
    const response = await fetch(`${second.url}/v1/runs/${started.id}/events`, { headers: AUTH })
    expect(response.status).toBe(200)
    const resumed = sseFrames(response)
    const replayed: SseFrame[] = []
    for (let frame = await resumed.next(); frame !== undefined; frame = frame.event === 'resumed' ? undefined : await resumed.next()) replayed.push(frame)
    expect(replayed.slice(0, before.length)).toEqual(before)
    const between = replayed.slice(before.length, -1)
    expect(between).toMatchObject([{ event: 'gap', data: { code: 'EVENT_IDS_RESERVED', first: before.length + 1, last: before.length + 1_000_000 } }])
    // The dead process could have gone on assigning ids after its snapshot (a decision, then frames): the new one
    // skips the ids the snapshot reserved, so no id a client read there names another frame here.
    expect(replayed.at(-1)).toMatchObject({ event: 'resumed', id: String(before.length + 1_000_001) })
    // A client that had read up to the snapshot's last frame learns that the ids were reserved (not that events were dropped).
    const after = sseFrames(await fetch(`${second.url}/v1/runs/${started.id}/events`, { headers: { ...AUTH, 'Last-Event-ID': String(before.length) } }))
    expect(await after.next()).toMatchObject({ event: 'gap', data: { code: 'EVENT_IDS_RESERVED', first: before.length + 1, last: before.length + 1_000_000 } })
    expect(await after.next()).toMatchObject({ event: 'resumed', id: String(before.length + 1_000_001) })
    await after.cancel()
    await decide(second.url, (approval.data as { id: string }).id)
    const rest = await resumed.rest()
    expect(rest.at(-1)).toMatchObject({ event: 'end', data: { id: started.id, status: 'done' } })
    const ids = rest.slice(replayed.length - 1).map((f) => Number(f.id))
    expect(ids).toEqual([...ids].sort((x, y) => x - y))
    expect(new Set(ids).size).toBe(ids.length)
  }, 180_000)
})
