/**
 * Issue 35's last gap: after `kill -9` and a restart on a file store (not watchable), the
 * events of a parked run are readable from the new process before its resume sweep adopts
 * the run (the stored frames, then the reserved ids), then its live frames, then `end`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { createFileStore } from '../../../platforms/node/index.js'
import { sseFrames, type SseFrame } from '../http/fixtures.js'
import { until } from '../../support/poll.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const base = mkdtempSync(join(tmpdir(), 'toolyard-stored-events-'))
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
  rmSync(base, { recursive: true, force: true })
})

const TOKEN = 'stored-events-token-0123456789abcdef'
const AUTH = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }

async function server(dataDir: string, staleMs = 1_000, parkAfterMs?: number): Promise<{ url: string; child: ChildProcess }> {
  const args = ['--import', 'tsx', 'test/fixtures/durable/server-child.ts', dataDir, TOKEN, String(staleMs), ...(parkAfterMs === undefined ? [] : [String(parkAfterMs)])]
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
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

type Frames = ReturnType<typeof sseFrames>

/** Reads `stream` up to and including its first `gap` frame. */
async function throughGap(stream: Frames): Promise<SseFrame[]> {
  const read: SseFrame[] = []
  for (let frame = await stream.next(); frame !== undefined; frame = frame.event === 'gap' ? undefined : await stream.next()) read.push(frame)
  return read
}

/** Starts `program` as a run on `url` and reads its events until its first approval (or `until`). */
async function startRun(url: string, program: string, until: string) {
  const started = (await (await fetch(`${url}/v1/runs`, { method: 'POST', headers: AUTH, body: JSON.stringify({ code: program, description: 'stored' }) })).json()) as { id: string }
  const live = sseFrames(await fetch(`${url}/v1/runs/${started.id}/events`, { headers: AUTH }))
  const last = await live.until(until)
  return { id: started.id, live, last, before: [...live.seen] }
}

async function kill(child: ChildProcess): Promise<void> {
  child.kill('SIGKILL')
  await new Promise((resolve) => child.once('exit', resolve))
}

describe('events of a stored run on a file store, before and after the new process adopts it', () => {
  it('answers 200 with the stored frames and the reserved ids, then the live frames once adopted, then the result and end', async () => {
    const dataDir = join(base, 'parked')
    const first = await server(dataDir)
    const program = "console.log('before')\nawait tools.write_file({ path: 'stored/events.md', content: 'x' })\nreturn 1"
    const run = await startRun(first.url, program, 'approval')
    // Parked (its state in `runs/`, written parkAfterMs after it asked) and its frames on disk: a run killed
    // before it parks has nothing to resume from (the next case).
    const files = createFileStore(dataDir)
    await until(async () => ((await Promise.all((await files.list('runs/')).entries.map(async (e) => (JSON.parse((await files.get(e.key))?.value ?? '{}') as { park?: unknown }).park !== undefined))).filter(Boolean).length === 1 && (await files.get(`run-events/${run.id}`)) !== undefined ? true : undefined), 'the parked run and its events on disk')
    await run.live.cancel()
    await kill(first.child)

    // Its heartbeat counts as alive for 8 s: the new process cannot adopt the run before then.
    const second = await server(dataDir, 8_000)
    const status = (await (await fetch(`${second.url}/v1/runs/${run.id}`, { headers: AUTH })).json()) as { status: string }
    expect(status.status).toBe('waiting')
    const response = await fetch(`${second.url}/v1/runs/${run.id}/events`, { headers: AUTH })
    expect(response.status).toBe(200)
    const stream = sseFrames(response)
    const stored = await throughGap(stream)
    expect(stored.slice(0, -1)).toEqual(run.before)
    // Read from the snapshot: the dead process's reserve is said to be reserved, not lost.
    const reserved = { code: 'EVENT_IDS_RESERVED', first: run.before.length + 1, last: run.before.length + 1_000_000 }
    expect(stored.at(-1)).toMatchObject({ event: 'gap', data: reserved })
    expect((stored.at(-1)!.data as { message: string }).message).toMatch(/were reserved by the process that ran this run before the server restarted/)
    // A client resuming from the last stored frame is told the same on this instance.
    const resuming = sseFrames(await fetch(`${second.url}/v1/runs/${run.id}/events`, { headers: { ...AUTH, 'Last-Event-ID': String(run.before.length) } }))
    expect(await resuming.next()).toMatchObject({ event: 'gap', data: reserved })
    await resuming.cancel()

    // Adopted by the sweep: the same stream goes on with the live frames, under the ids after the reserve.
    expect(await stream.next()).toMatchObject({ event: 'resumed', id: String(run.before.length + 1_000_001), data: { id: run.id, resumed: true } })
    const decided = await fetch(`${second.url}/v1/approvals/${(run.last.data as { id: string }).id}`, { method: 'POST', headers: AUTH, body: JSON.stringify({ decision: 'allow' }) })
    expect(decided.status).toBe(200)
    const live = (await stream.rest()).slice(stored.length + 1)
    expect(live.at(-2)).toMatchObject({ event: 'result', data: { isError: false, value: { result: 1 } } })
    expect(live.at(-1)).toMatchObject({ event: 'end', data: { id: run.id, status: 'done' } })
    const ids = live.map((frame) => Number(frame.id))
    expect(ids.every((id, i) => id === run.before.length + 1_000_002 + i)).toBe(true)
  }, 120_000)

  it('a run killed before it parked: its stored frames, then the reserved ids, then end failed once its process counts as dead', async () => {
    const dataDir = join(base, 'lost')
    // It would park a minute after it asked: killed before that, it never parked (its frames are stored from its first approval).
    const first = await server(dataDir, 1_000, 60_000)
    const run = await startRun(first.url, "console.log('before')\nawait tools.write_file({ path: 'lost/events.md', content: 'x' })\nreturn 1", 'approval')
    const files = createFileStore(dataDir)
    await until(async () => ((await files.get(`run-events/${run.id}`)) !== undefined ? true : undefined), 'its events on disk')
    await kill(first.child)
    // Its record holds its view only: no parked state.
    expect((await Promise.all((await files.list('runs/')).entries.map(async (e) => (JSON.parse((await files.get(e.key))?.value ?? '{}') as { park?: unknown }).park !== undefined))).filter(Boolean)).toHaveLength(0)

    const second = await server(dataDir, 8_000)
    const stream = sseFrames(await fetch(`${second.url}/v1/runs/${run.id}/events`, { headers: AUTH }))
    const stored = await throughGap(stream)
    expect(stored.slice(0, -1)).toEqual(run.before)
    expect(stored.at(-1)).toMatchObject({ event: 'gap', data: { code: 'EVENT_IDS_RESERVED' } })
    // No state to resume: once its heartbeat is stale the sweep ends its record, and the stream says so.
    expect(await stream.rest()).toHaveLength(stored.length + 1)
    expect(stream.seen.at(-1)).toMatchObject({ event: 'end', data: { id: run.id, status: 'failed' } })
    const body = (await (await fetch(`${second.url}/v1/runs/${run.id}`, { headers: AUTH })).json()) as { status: string; result?: { error?: { info?: { code?: string } } } }
    expect(body.status).toBe('failed')
    expect(body.result?.error?.info?.code).toBe('INTERRUPTED')
  }, 120_000)
})
