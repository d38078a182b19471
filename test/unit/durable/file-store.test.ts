import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { createFileStore, createSandboxRuntime } from '../../../platforms/node/index.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { until } from '../../support/poll.js'
import { payTool } from '../../support/pay-fixture.js'

/**
 * What only the file store promises, across real processes (the contract suite covers the
 * rest): compare-and-set between two processes, a writer killed with SIGKILL mid-write and
 * inside its lock, stale locks, and a re-opened directory. Children run
 * test/fixtures/durable/file-store-child.ts through tsx.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url))
const base = mkdtempSync(join(tmpdir(), 'toolyard-file-store-unit-'))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let n = 0
const freshDir = () => join(base, `dir-${n++}`)
const hex = (key: string) => Buffer.from(key, 'latin1').toString('hex')

function child(args: string[]): { process: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/durable/file-store-child.ts', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  proc.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  proc.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  return { process: proc, output: () => out, exited }
}

/** A value the hammer child writes is `i|<digit × size>|i`: whole only if both ends and every digit agree. */
function expectWhole(value: string, size: number): void {
  const [head, body, tail] = value.split('|')
  expect(head).toBe(tail)
  expect(body!.length).toBe(size)
  expect(body).toBe(String(Number(head) % 10).repeat(size))
}

describe('createFileStore across processes', () => {
  it('two child processes racing compare-and-set increments on one key lose no update', async () => {
    const dir = freshDir()
    await createFileStore(dir).put('counter', '0')
    const children = [child(['increment', dir, '150']), child(['increment', dir, '150'])]
    const codes = await Promise.all(children.map((c) => c.exited))
    expect(codes, children.map((c) => c.output()).join('\n')).toEqual([0, 0])
    expect((await createFileStore(dir).get('counter'))?.value).toBe('300')
    for (const c of children) expect(c.output()).toMatch(/^done \d+\n$/)
  })

  it('a writer killed with SIGKILL inside its lock, mid-write: the old value stays whole and the next writer breaks the lock at once', async () => {
    const dir = freshDir()
    const size = 16 * 1024 * 1024
    const writer = child(['hammer', dir, String(size)])
    await until(() => writer.output().includes('ready'), 'the first write', 60_000, 1)
    const lock = join(dir, `${hex('big')}.lock`)
    await until(() => existsSync(lock), 'the writer inside its lock', 60_000, 1)
    writer.process.kill('SIGKILL')
    await writer.exited
    expect(existsSync(lock)).toBe(true)

    // The dead writer's lock would hold for staleLockMs (30 s); its pid is gone, so it is broken now.
    const store = createFileStore(dir, { maxValueBytes: 64 * 1024 * 1024, lockTimeoutMs: 5_000 })
    const before = (await store.get('big'))!
    expectWhole(before.value, size)
    expect(await store.put('big', 'after', { ifVersion: before.version })).toMatchObject({ ok: true })
    expect((await store.get('big'))?.value).toBe('after')
    expect((await store.list('')).entries.map((entry) => entry.key)).toEqual(['big'])
    expect(existsSync(lock)).toBe(false)
  })

  it('writers killed at random moments always leave a whole value', async () => {
    const dir = freshDir()
    const size = 256 * 1024
    const store = createFileStore(dir, { maxValueBytes: 1024 * 1024, lockTimeoutMs: 5_000 })
    for (let round = 0; round < 4; round++) {
      const writer = child(['hammer', dir, String(size)])
      await until(() => writer.output().includes('ready'), 'the first write', 60_000, 1)
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 100))
      writer.process.kill('SIGKILL')
      await writer.exited
      expectWhole((await store.get('big'))!.value, size)
      expect((await store.list('')).entries.map((entry) => entry.key)).toEqual(['big'])
    }
    expect(await store.put('big', 'still writable')).toMatchObject({ ok: true })
  })
})

describe('createFileStore in one process', () => {
  it('a new store on the same directory sees every key, value and version', async () => {
    const dir = freshDir()
    const first = createFileStore(dir)
    const a = await first.put('run/a/journal', '[1,2]')
    await first.put('approval/x', '{"tool":"write_file"}')
    await first.put('gone', 'x')
    await first.delete('gone')
    const second = createFileStore(dir)
    expect(await second.get('run/a/journal')).toEqual({ value: '[1,2]', version: a.version })
    expect((await second.list('')).entries.map((entry) => entry.key)).toEqual(['approval/x', 'run/a/journal'])
    expect(await second.put('run/a/journal', '[1,2,3]', { ifVersion: a.version })).toMatchObject({ ok: true })
    expect(await first.put('run/a/journal', 'stale', { ifVersion: a.version })).toMatchObject({ ok: false })
  })

  it('names files by the hex of the key, inside the directory only', async () => {
    const dir = freshDir()
    const store = createFileStore(dir)
    await store.put('run/A/..x', 'v')
    await store.put('run/a/..x', 'w')
    expect(readdirSync(dir).sort()).toEqual([`${hex('run/A/..x')}.v`, `${hex('run/a/..x')}.v`].sort())
    expect((await store.get('run/A/..x'))?.value).toBe('v')
  })

  it('breaks a lock older than staleLockMs, and waits at most lockTimeoutMs behind a live one', async () => {
    const dir = freshDir()
    const store = createFileStore(dir, { staleLockMs: 60_000, lockTimeoutMs: 300 })
    await store.put('k', 'v1')
    // Another host's lock: its pid cannot be checked from here, only its age.
    const lock = join(dir, `${hex('k')}.lock`)
    writeFileSync(lock, JSON.stringify({ pid: 1, host: 'elsewhere', time: Date.now(), nonce: 'x' }))
    await expect(store.put('k', 'v2')).rejects.toMatchObject({ code: 'STORE_BUSY' })
    expect((await store.get('k'))?.value).toBe('v1')
    // Locks, break guards and temp files never show in list().
    writeFileSync(join(dir, `${hex('k')}.break`), '{}')
    writeFileSync(join(dir, '.0123456789abcdef.tmp'), 'half a value')
    writeFileSync(join(dir, `${hex('k')}.v.tmp`), 'x')
    expect((await store.list('')).entries.map((entry) => entry.key)).toEqual(['k'])
    rmSync(join(dir, `${hex('k')}.break`))
    const old = (Date.now() - 120_000) / 1000
    utimesSync(lock, old, old)
    expect(await store.put('k', 'v2')).toMatchObject({ ok: true })
    expect(existsSync(lock)).toBe(false)
  })

  it('refuses a corrupt record with STORE_FAILED instead of reading it as a value', async () => {
    const dir = freshDir()
    const store = createFileStore(dir)
    await store.put('k', 'v')
    writeFileSync(join(dir, `${hex('k')}.v`), 'not a record')
    await expect(store.get('k')).rejects.toMatchObject({ code: 'STORE_FAILED' })
    await expect(store.put('k', 'x')).rejects.toMatchObject({ code: 'STORE_FAILED' })
  })

  it('validates its options', () => {
    expect(() => createFileStore('')).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => createFileStore(freshDir(), { staleLockMs: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => createFileStore(freshDir(), { maxValueBytes: -1 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
  })
})

describe('createFileStore when its directory cannot be made', () => {
  it('fails with STORE_FAILED, then works once the path is usable', async () => {
    const blocker = freshDir()
    writeFileSync(blocker, 'a file where the directory should be')
    const store = createFileStore(join(blocker, 'store'))
    await expect(store.put('k', 'v')).rejects.toMatchObject({ code: 'STORE_FAILED' })
    await expect(store.get('k')).rejects.toMatchObject({ code: 'STORE_FAILED' })
    rmSync(blocker)
    expect(await store.put('k', 'v')).toMatchObject({ ok: true })
    expect((await store.get('k'))?.value).toBe('v')
  })
})

/** A record file as the store writes it. */
const record = (version: string, value: string) => `toolyard-store/1 ${version}\n${value}`

describe('createFileStore on a hostile directory: one stray entry never breaks the store', () => {
  /** A store holding `runs/good`, and the path of the value file `key` would have. */
  async function storeWithGood(options: Parameters<typeof createFileStore>[1] = {}) {
    const dir = freshDir()
    const store = createFileStore(dir, options)
    await store.put('runs/good', 'ok')
    return { dir, store, fileOf: (key: string) => join(dir, `${hex(key)}.v`) }
  }
  const failed = (message: RegExp) => expect.objectContaining({ code: 'STORE_FAILED', message: expect.stringMatching(message) })

  it('a symbolic link where a record should be is never followed: get fails, a listing skips and counts it', async () => {
    const { store, fileOf } = await storeWithGood()
    const outside = join(freshDir() + '-outside')
    writeFileSync(outside, record('1.x', 'a secret outside the store'))
    symlinkSync(outside, fileOf('runs/link'))
    await expect(store.get('runs/link')).rejects.toEqual(failed(/is a symbolic link/))
    expect((await store.list('runs/')).entries.map((e) => e.key)).toEqual(['runs/good'])
    expect(store.skippedEntries()).toBe(1)
  })

  it('a FIFO where a record or a lock should be never blocks: get and list answer, a write gives up', async () => {
    const { store, fileOf, dir } = await storeWithGood()
    expect(spawnSync('mkfifo', [fileOf('runs/fifo')]).status).toBe(0)
    await expect(store.get('runs/fifo')).rejects.toEqual(failed(/is not a regular file/))
    expect((await store.list('runs/')).entries.map((e) => e.key)).toEqual(['runs/good'])
    expect(store.skippedEntries()).toBe(1)
    await expect(store.put('runs/fifo', 'x')).rejects.toEqual(failed(/is not a regular file/))
    // A FIFO as a key's lock: the writer waits its lockTimeoutMs, then says so (a fresh lock it cannot read only ages out).
    const locked = createFileStore(dir, { lockTimeoutMs: 200 })
    expect(spawnSync('mkfifo', [join(dir, `${hex('runs/good')}.lock`)]).status).toBe(0)
    await expect(locked.put('runs/good', 'y')).rejects.toEqual(expect.objectContaining({ code: 'STORE_BUSY' }))
    expect((await locked.get('runs/good'))?.value).toBe('ok')
  })

  it('a directory where a record should be: get fails, a listing skips it', async () => {
    const { store, fileOf } = await storeWithGood()
    mkdirSync(fileOf('runs/dir'))
    await expect(store.get('runs/dir')).rejects.toEqual(failed(/is not a regular file/))
    expect((await store.list('runs/')).entries.map((e) => e.key)).toEqual(['runs/good'])
    expect(store.skippedEntries()).toBe(1)
  })

  it('a file larger than a record can be is refused by its size, before anything is read', async () => {
    const { store, fileOf } = await storeWithGood({ maxValueBytes: 1024 })
    const huge = fileOf('runs/huge')
    writeFileSync(huge, record('1.x', 'x'))
    // 8 GiB, sparse: reading it whole would take the heap down.
    truncateSync(huge, 8 * 1024 * 1024 * 1024)
    await expect(store.get('runs/huge')).rejects.toEqual(failed(/holds 8589934592 bytes, more than a record can \(1152\)/))
    expect((await store.list('runs/')).entries.map((e) => e.key)).toEqual(['runs/good'])
    expect(store.skippedEntries()).toBe(1)
    // A record at the value cap is still read whole.
    await store.put('runs/full', 'y'.repeat(1024))
    expect((await store.get('runs/full'))?.value).toBe('y'.repeat(1024))
  })

  it('malformed entries (no header, a name that decodes to no valid key) are skipped and counted; the rest is listed and paged', async () => {
    const { store, fileOf, dir } = await storeWithGood()
    writeFileSync(fileOf('runs/bad'), '{"not":"a record"}')
    writeFileSync(join(dir, `${hex('runs/has space')}.v`), record('1.x', 'v'))
    for (let i = 0; i < 3; i++) await store.put(`runs/z${i}`, 'v')
    await expect(store.get('runs/bad')).rejects.toEqual(failed(/is corrupt \(no header\)/))
    const first = await store.list('runs/', { limit: 2 })
    const second = await store.list('runs/', { limit: 2, after: first.cursor! })
    expect([...first.entries, ...second.entries].map((e) => e.key)).toEqual(['runs/good', 'runs/z0', 'runs/z1', 'runs/z2'])
    expect(store.skippedEntries()).toBeGreaterThanOrEqual(2)
  })

  it('creates its directory 0700 and its records 0600 whatever the umask; an existing directory keeps its mode', async () => {
    for (const umask of ['000', '022']) {
      const dir = join(freshDir(), 'nested')
      const c = child2(['test/fixtures/durable/file-store-umask-child.ts', umask, dir])
      expect(c.status, c.output).toBe(0)
      expect(statSync(dir).mode & 0o777).toBe(0o700)
      const files = readdirSync(dir)
      expect(files).toEqual([`${hex('a')}.v`])
      expect(statSync(join(dir, files[0]!)).mode & 0o777).toBe(0o600)
    }
    const existing = freshDir()
    mkdirSync(existing, { mode: 0o750 })
    chmodSync(existing, 0o750)
    await createFileStore(existing).put('a', 'b')
    expect(statSync(existing).mode & 0o777).toBe(0o750)
  })
})

/** Runs a fixture script through tsx and waits for it. */
function child2(args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', ...args], { cwd: root, encoding: 'utf8' })
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}

describe('the resume sweep over a file store with stray runs/ entries', () => {
  it('skips a FIFO, a link, a directory, a headerless and a non-JSON runs/ record, and resumes the real parked run', async () => {
    const dir = freshDir()
    const asked: string[] = []
    const processOn = () => {
      const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
      const runtime = createToolRuntime({ mode: 'code', codeRuntime, store: createFileStore(dir), approval: (request) => new Promise<boolean>(() => void asked.push(request.execution.callId)) })
      runtime.register(payTool())
      runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
      return { runtime, codeRuntime }
    }
    const a = processOn()
    void a.runtime.execute({ callId: 'run-s', name: 'run_code', arguments: { code: 'return await tools.pay({ cents: 1 })', description: 'pay' }, signal: new AbortController().signal })
    const store = createFileStore(dir)
    await until(() => existsSync(join(dir, `${hex('runs/run-s')}.v`)), 'the run to park', 60_000, 1)
    // Strays sorted before and after the real record.
    const fileOf = (key: string) => join(dir, `${hex(key)}.v`)
    expect(spawnSync('mkfifo', [fileOf('runs/a-fifo')]).status).toBe(0)
    writeFileSync(fileOf('runs/b-headerless'), '{"version":1}')
    writeFileSync(fileOf('runs/c-json'), record('1.x', '{ not json'))
    symlinkSync(fileOf('runs/run-s'), fileOf('runs/d-link'))
    mkdirSync(fileOf('runs/z-dir'))
    const b = processOn()
    try {
      const resumed = await b.runtime.resumeRuns({ staleMs: 0 })
      expect(resumed.map((r) => r.callId)).toEqual(['run-s'])
      await until(() => asked.length === 2, 'the resumed call to ask again', 60_000, 1)
      for (const r of resumed) r.cancel()
    } finally {
      await Promise.all([a.runtime.dispose(), b.runtime.dispose()])
      await Promise.all([a.codeRuntime.dispose(), b.codeRuntime.dispose()])
    }
    expect((await store.list('runs/')).entries.map((e) => e.key)).not.toContain('runs/a-fifo')
  }, 60_000)

  it('a runs/ record that cannot be read when the sweep gets it (a store error) is skipped, and the sweep goes on', async () => {
    const dir = freshDir()
    const asked: string[] = []
    const processOn = (store: DurableStore) => {
      const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
      const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval: (request) => new Promise<boolean>(() => void asked.push(request.execution.callId)) })
      runtime.register(payTool())
      runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
      return { runtime, codeRuntime }
    }
    const a = processOn(createFileStore(dir))
    void a.runtime.execute({ callId: 'run-t', name: 'run_code', arguments: { code: 'return await tools.pay({ cents: 2 })', description: 'pay' }, signal: new AbortController().signal })
    await until(() => existsSync(join(dir, `${hex('runs/run-t')}.v`)), 'the run to park', 60_000, 1)
    // Listed, then unreadable by the time the sweep reads it (a file replaced between the two, a storage error).
    const files = createFileStore(dir)
    await files.put('runs/a-gone', '{}')
    const flaky: DurableStore = {
      ...files,
      get: (key) => (key === 'runs/a-gone' ? Promise.reject(Object.assign(new Error('the store file is not a regular file'), { code: 'STORE_FAILED' })) : files.get(key)),
    }
    const b = processOn(flaky)
    try {
      const resumed = await b.runtime.resumeRuns({ staleMs: 0 })
      expect(resumed.map((r) => r.callId)).toEqual(['run-t'])
      for (const r of resumed) r.cancel()
    } finally {
      await Promise.all([a.runtime.dispose(), b.runtime.dispose()])
      await Promise.all([a.codeRuntime.dispose(), b.codeRuntime.dispose()])
    }
  }, 60_000)
})
