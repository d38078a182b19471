import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startServer } from '../../../examples/start.js'
import { createFileStore } from '../../../platforms/node/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { PendingApproval, ApprovalBroker } from '../../../src/approvals/index.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'

/**
 * Durable approvals over the file store (docs/approvals.md, "Durable approvals"): two
 * brokers on one directory, and real processes: a child that asks is killed with SIGKILL,
 * the parent lists and decides its request, and a new child asking under the same callId
 * (a resumed run) gets the decision at once. Children run
 * test/fixtures/approvals/store-child.ts through tsx.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url))
const base = mkdtempSync(join(tmpdir(), 'toolyard-approvals-store-'))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let n = 0
const freshDir = () => join(base, `dir-${n++}`)

interface Child {
  readonly process: ChildProcess
  readonly lines: () => Record<string, unknown>[]
  readonly exited: Promise<number | null>
  readonly output: () => string
}

function child(args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/approvals/store-child.ts', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  proc.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  const lines = () =>
    out
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
  return { process: proc, lines, exited, output: () => out + err }
}

async function onlyPending(broker: ApprovalBroker): Promise<PendingApproval> {
  return until(async () => {
    const list = await broker.pending()
    return list.length === 1 ? list[0] : undefined
  }, 'one pending approval')
}

describe('durable approvals over createFileStore', () => {
  it('two brokers on one directory: listed and decided in B, the call waiting in A gets it; the first decision wins', async () => {
    const dir = freshDir()
    const a = createApprovalBroker({ store: createFileStore(dir), pollIntervalMs: 20 })
    const b = createApprovalBroker({ store: createFileStore(dir), pollIntervalMs: 20 })
    const asked = Promise.resolve(a.handler({ execution: { callId: 'run-1:code:1', name: 'pay', arguments: { amount: 3 }, signal: new AbortController().signal } } as never))
    // Marked handled now: it may reject before the assertion below looks at it.
    asked.catch(() => undefined)
    const request = await onlyPending(b)
    expect(request).toMatchObject({ callId: 'run-1:code:1', name: 'pay', arguments: { amount: 3 } })
    const answers = await Promise.all([b.decide(request.id, { decision: 'deny', reason: 'b says no' }), a.decide(request.id, { decision: 'allow' })])
    expect(answers.filter((answer) => answer.ok)).toHaveLength(1)
    const winner = answers.find((answer) => answer.ok)!
    if (winner.ok && winner.decision === 'allow') await expect(asked).resolves.toBe(true)
    else await expect(asked).rejects.toThrow('pay was denied by a person: b says no')
    expect(answers.find((answer) => !answer.ok)).toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED' })
    expect(await a.pending()).toEqual([])
    a.dispose()
    b.dispose()
  })

  it('a child that asks is killed with SIGKILL; the parent lists and decides its request; a new child asking under the same callId gets the decision at once', async () => {
    const dir = freshDir()
    const first = child(['ask', dir, 'run-42:code:2', '600000'])
    const parent = createApprovalBroker({ store: createFileStore(dir) })
    const request = await onlyPending(parent)
    expect(request).toMatchObject({ callId: 'run-42:code:2', name: 'write_file', arguments: { path: 'notes/todo.md', content: '- ship it\n' }, reason: 'changes the workspace' })
    expect(request.summary).toBe('path: "notes/todo.md"\ncontent: "- ship it\\n"')
    await until(() => (first.lines().some((line) => line.event === 'requested') ? true : undefined), 'the first child to hear its request')
    first.process.kill('SIGKILL')
    expect(await first.exited).toBe(null)
    expect(first.lines().some((line) => 'outcome' in line)).toBe(false)

    // The process that asked is gone; its request is still listed, and can be decided.
    expect(await parent.pending()).toEqual([request])
    expect(await parent.decide(request.id, { decision: 'allow', reason: 'go ahead' })).toMatchObject({ ok: true, decision: 'allow' })
    expect(await parent.pending()).toEqual([])

    const resumed = child(['ask', dir, 'run-42:code:2', '600000'])
    expect(await resumed.exited, resumed.output()).toBe(0)
    expect(resumed.lines()).toEqual([
      { event: 'requested', id: request.id, expiresAt: request.expiresAt },
      { event: 'decided', id: request.id, expiresAt: request.expiresAt },
      { outcome: 'allowed' },
    ])
    // A second decision, from any process, hears the first.
    expect(await createApprovalBroker({ store: createFileStore(dir) }).decide(request.id, { decision: 'deny' })).toMatchObject({ ok: false, code: 'APPROVAL_ALREADY_DECIDED' })
    parent.dispose()
  })

  it('a child killed while waiting and restarted before anyone decided re-attaches to the same request and expiry, and hears a decision taken elsewhere', async () => {
    const dir = freshDir()
    const first = child(['ask', dir, 'run-7:code:1', '600000'])
    const parent = createApprovalBroker({ store: createFileStore(dir) })
    const request = await onlyPending(parent)
    first.process.kill('SIGKILL')
    await first.exited
    const resumed = child(['ask', dir, 'run-7:code:1', '5000'])
    await until(() => (resumed.lines().some((line) => line.event === 'requested') ? true : undefined), 'the resumed child to re-attach')
    expect(resumed.lines()[0]).toEqual({ event: 'requested', id: request.id, expiresAt: request.expiresAt })
    expect(await parent.pending()).toEqual([request])
    expect(await parent.decide(request.id, { decision: 'deny', reason: 'not now' })).toMatchObject({ ok: true })
    expect(await resumed.exited, resumed.output()).toBe(0)
    expect(resumed.lines().at(-1)).toEqual({ outcome: 'denied', message: 'write_file was denied by a person: not now' })
    parent.dispose()
  })
})

describe('npm start with a data directory (startServer({ dataDir }))', () => {
  it('a call waiting in one server is listed and decided over HTTP by another server on the same directory; a graceful shutdown withdraws what waited', async () => {
    const dataDir = freshDir()
    const token = 'durable-start-token-0123456789'
    const auth = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }
    const [a, b] = await Promise.all([startServer({ port: 0, token, staticDir: null, dataDir }), startServer({ port: 0, token, staticDir: null, dataDir })])
    try {
      expect(a.store).toBeDefined()
      const write = (server: typeof a, path: string) =>
        fetch(`${server.url}/v1/tools/write_file/execute`, { method: 'POST', headers: auth, body: JSON.stringify({ arguments: { path, content: 'hi\n' } }) })
      const listed = async (server: typeof a) => ((await (await fetch(`${server.url}/v1/approvals`, { headers: auth })).json()) as { approvals: PendingApproval[] }).approvals
      const call = write(a, 'notes/durable.md')
      const [request] = await until(async () => {
        const list = await listed(b)
        return list.length === 1 ? list : undefined
      }, 'server B to list server A\'s request')
      expect(request).toMatchObject({ name: 'write_file', arguments: { path: 'notes/durable.md', content: 'hi\n' } })
      const decided = await fetch(`${b.url}/v1/approvals/${request!.id}`, { method: 'POST', headers: auth, body: JSON.stringify({ decision: 'allow' }) })
      expect(decided.status).toBe(200)
      const again = await fetch(`${a.url}/v1/approvals/${request!.id}`, { method: 'POST', headers: auth, body: JSON.stringify({ decision: 'deny' }) })
      expect(again.status).toBe(409)
      const result = (await (await call).json()) as ToolExecutionResult
      expect(result.isError).toBe(false)

      const stranded = write(a, 'notes/stranded.md')
      await until(async () => ((await listed(b)).length === 1 ? true : undefined), 'the second request')
      await a.shutdown()
      const strandedResult = (await (await stranded).json()) as ToolExecutionResult
      expect(strandedResult.isError).toBe(true)
      expect(await listed(b)).toEqual([])
    } finally {
      await Promise.all([a.shutdown(), b.shutdown()])
    }
  })
})

describe('stray files among the open approvals', () => {
  it('a FIFO, a link, a directory, a headerless and a non-JSON record under approvals/open/ never break pending()', async () => {
    const dir = freshDir()
    const store = createFileStore(dir)
    const broker = createApprovalBroker({ store })
    expect(await broker.pending()).toEqual([])
    const fileOf = (key: string) => join(dir, `${Buffer.from(key, 'latin1').toString('hex')}.v`)
    expect(spawnSync('mkfifo', [fileOf('approvals/open/a')]).status).toBe(0)
    writeFileSync(fileOf('approvals/open/b'), '{"id":"x"}')
    writeFileSync(fileOf('approvals/open/c'), 'toolyard-store/1 1.x\n{ not json')
    symlinkSync('/etc/passwd', fileOf('approvals/open/d'))
    mkdirSync(fileOf('approvals/open/e'))
    expect(await broker.pending()).toEqual([])
    expect(await broker.pending()).toEqual([])
    broker.dispose?.()
  })
})
