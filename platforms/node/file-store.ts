/**
 * `createFileStore(dir)`: the `DurableStore` seam over one directory, shared safely by every
 * process that opens it. docs/durability.md.
 *
 * Layout (flat): a key's value lives in `<hex>.v`, where `<hex>` is the key's characters in
 * lowercase hex (injective, no separator or dot can reach the file system, and two keys
 * differing only in case stay distinct on a case-insensitive disk). Beside it, only while
 * an operation runs: `<hex>.lock` (the key's lock), `<hex>.break` (the guard of a stale-lock
 * break) and `.<nonce>.tmp` (a value being written; the key is not in its name, which
 * must stay under the 255-byte limit of most file systems). `list` only reads names ending
 * in `.v`, so the others never show.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { link, mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join, resolve } from 'node:path'
import { ToolError } from '../../src/errors.js'
import {
  assertStoreKey,
  assertStorePrefix,
  assertStoreValue,
  readIfVersion,
  readListOptions,
  resolveMaxValueBytes,
  storeError,
  versionMatches,
  type DurableStore,
  type StoreEntry,
  type StoreOptions,
} from '../../src/durable/store.js'

/** Options of {@link createFileStore}. */
export interface FileStoreOptions extends StoreOptions {
  /**
   * A lock older than this is stale and may be broken, whoever holds it (default
   * {@link DEFAULT_STALE_LOCK_MS}). A lock whose holder is a process of this host that no
   * longer exists is broken at once. An operation holds a lock for a few file-system calls.
   */
  readonly staleLockMs?: number
  /** How long an operation waits for a key's lock before failing with `STORE_BUSY` (default {@link DEFAULT_LOCK_TIMEOUT_MS}). */
  readonly lockTimeoutMs?: number
}

/** The default age past which a lock is stale: 30 s (an operation holds one for milliseconds). */
export const DEFAULT_STALE_LOCK_MS = 30_000
/** The default wait for a key's lock: 10 s. */
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000

const HEADER = 'toolyard-store/1 '
const VALUE_FILE = /^((?:[0-9a-f]{2})+)\.v$/
const host = hostname()

const errorCode = (error: unknown): unknown => (error as { code?: unknown } | null)?.code
const nonce = () => randomBytes(8).toString('hex')
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

function encodeKey(key: string): string {
  let hex = ''
  for (let i = 0; i < key.length; i++) hex += key.charCodeAt(i).toString(16).padStart(2, '0')
  return hex
}

function decodeKey(hex: string): string {
  let key = ''
  for (let i = 0; i < hex.length; i += 2) key += String.fromCharCode(parseInt(hex.slice(i, i + 2), 16))
  return key
}

function isKey(key: string): boolean {
  try {
    assertStoreKey(key)
    return true
  } catch {
    return false
  }
}

/** Parses a value file; a file without the header is corrupt (`STORE_FAILED`), never read as a value. */
function parseRecord(text: string, file: string): StoreEntry {
  const end = text.indexOf('\n')
  if (!text.startsWith(HEADER) || end < 0) throw storeError('STORE_FAILED', `the store file ${file} is corrupt (no header)`)
  return { version: text.slice(HEADER.length, end), value: text.slice(end + 1) }
}

/** `<seq>.<nonce>`: the sequence makes versions of a key increase; the nonce keeps a re-created key from repeating one. */
function nextVersion(current: string | undefined): string {
  const seq = current === undefined ? 0 : Number.parseInt(current, 10)
  return `${Number.isSafeInteger(seq) ? seq + 1 : 1}.${nonce()}`
}

/** fsync of a directory makes a rename or unlink in it durable; some platforms cannot open a directory (ignored there). */
async function syncDirectory(dir: string): Promise<void> {
  let handle
  try {
    handle = await open(dir, 'r')
    await handle.sync()
  } catch (error) {
    if (!['EISDIR', 'EPERM', 'EACCES', 'EINVAL'].includes(errorCode(error) as string)) throw error
  } finally {
    await handle?.close()
  }
}

/** Writes `text` to a fresh temp file, fsyncs it, then renames it over `target`: a reader sees the old file or the new one. */
async function writeAtomically(dir: string, target: string, text: string): Promise<void> {
  const temp = join(dir, `.${nonce()}.tmp`)
  const handle = await open(temp, 'wx')
  try {
    try {
      await handle.writeFile(text, 'utf8')
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, target)
  } catch (error) {
    await unlink(temp).catch(() => {})
    throw error
  }
  await syncDirectory(dir)
}

/** Whether a process of this host with that pid exists (EPERM: it exists, owned by someone else). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return errorCode(error) === 'EPERM'
  }
}

/**
 * Creates `path` holding `body` only if it does not exist, in one step: the body is written
 * to a temp file first, then hard-linked to `path` (`link` fails if `path` exists). A lock
 * created by `open(O_EXCL)` then written would exist empty for a moment, and a process
 * killed in that moment would leave a lock naming no holder: only its age could break it.
 * Where hard links are refused, falls back to `O_EXCL` (that window reopens).
 */
async function createExclusive(dir: string, path: string, body: string): Promise<boolean> {
  const temp = join(dir, `.${nonce()}.tmp`)
  await writeFile(temp, body)
  try {
    await link(temp, path)
    return true
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    if (!['EPERM', 'ENOTSUP', 'ENOSYS', 'EOPNOTSUPP'].includes(errorCode(error) as string)) throw error
    try {
      await writeFile(path, body, { flag: 'wx' })
      return true
    } catch (fallback) {
      if (errorCode(fallback) === 'EEXIST') return false
      throw fallback
    }
  } finally {
    await unlink(temp).catch(() => {})
  }
}

interface LockFile {
  readonly body: string
  readonly mtimeMs: number
}

async function readLock(path: string): Promise<LockFile | undefined> {
  try {
    const [body, info] = await Promise.all([readFile(path, 'utf8'), stat(path)])
    return { body, mtimeMs: info.mtimeMs }
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    throw error
  }
}

/** Stale: older than the bound, or held by a process of this host that is gone. An unreadable lock only ages out. */
function isStale(lock: LockFile, staleLockMs: number): boolean {
  if (Date.now() - lock.mtimeMs > staleLockMs) return true
  try {
    const holder = JSON.parse(lock.body) as { pid?: unknown; host?: unknown }
    return holder.host === host && typeof holder.pid === 'number' && holder.pid !== process.pid && !processExists(holder.pid)
  } catch {
    return false
  }
}

/**
 * Per-key exclusion across processes: `<hex>.lock` created exclusively, already holding
 * pid, host, time and a nonce (see {@link createExclusive}). Breaking a stale lock is itself guarded by `<hex>.break` (O_EXCL), and
 * the breaker re-reads the lock under that guard: it removes the lock only if it is still
 * the very stale one it judged, never one a live process took meanwhile.
 */
class KeyLocks {
  constructor(
    private readonly dir: string,
    private readonly staleLockMs: number,
    private readonly lockTimeoutMs: number,
  ) {}

  async withLock<T>(hex: string, body: () => Promise<T>): Promise<T> {
    const path = join(this.dir, `${hex}.lock`)
    const mine = JSON.stringify({ pid: process.pid, host, time: Date.now(), nonce: nonce() })
    const deadline = Date.now() + this.lockTimeoutMs
    for (let attempt = 0; ; attempt++) {
      if (await createExclusive(this.dir, path, mine)) break
      await this.breakIfStale(hex, path)
      if (Date.now() > deadline) throw storeError('STORE_BUSY', `the store key's lock is held by another process (waited ${this.lockTimeoutMs} ms)`)
      await sleep(Math.random() * Math.min(2 ** attempt, 50))
    }
    try {
      return await body()
    } finally {
      // Only our own lock is removed: a holder that outlived staleLockMs finds another's and leaves it.
      if ((await readLock(path))?.body === mine) await unlink(path).catch(() => {})
    }
  }

  private async breakIfStale(hex: string, path: string): Promise<void> {
    const judged = await readLock(path)
    if (judged === undefined || !isStale(judged, this.staleLockMs)) return
    const guard = join(this.dir, `${hex}.break`)
    if (!(await createExclusive(this.dir, guard, JSON.stringify({ pid: process.pid, host, time: Date.now() })))) {
      // A breaker killed inside its few calls leaves its guard: remove it once stale too.
      const left = await readLock(guard)
      if (left !== undefined && isStale(left, this.staleLockMs)) await unlink(guard).catch(() => {})
      return
    }
    try {
      const again = await readLock(path)
      if (again !== undefined && again.body === judged.body && again.mtimeMs === judged.mtimeMs) await unlink(path).catch(() => {})
    } finally {
      await unlink(guard).catch(() => {})
    }
  }
}

/** Reads a key's record; `undefined` when absent. */
async function readRecord(file: string): Promise<StoreEntry | undefined> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    throw storeError('STORE_FAILED', `cannot read the store file ${file}`, error)
  }
  return parseRecord(text, file)
}

/** Reads only a record's header line (its version), never its value. */
async function readVersion(file: string): Promise<string | undefined> {
  let handle
  try {
    handle = await open(file, 'r')
    const buffer = Buffer.alloc(HEADER.length + 64)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const text = buffer.subarray(0, bytesRead).toString('utf8')
    // The header line is at most ~60 bytes: no newline within the buffer means a corrupt file.
    return parseRecord(text, file).version
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    throw error
  } finally {
    await handle?.close()
  }
}

/** Removes temp files a killed writer left behind (older than the stale bound: a live writer's is milliseconds old). */
async function sweepTempFiles(dir: string, staleLockMs: number): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!name.startsWith('.') || !name.endsWith('.tmp')) continue
    const path = join(dir, name)
    const info = await stat(path).catch(() => undefined)
    if (info !== undefined && Date.now() - info.mtimeMs > staleLockMs) await unlink(path).catch(() => {})
  }
}

/**
 * A conditional write whose condition already fails is answered without the lock: the
 * version read was the key's state at a moment inside the call, so the conflict is a true
 * answer, and a burst of losers costs one read each instead of a lock round each.
 */
async function earlyConflict(file: string, ifVersion: string | null | undefined): Promise<{ ok: false; version: string | undefined } | undefined> {
  if (ifVersion === undefined) return undefined
  const current = await readVersion(file).catch(() => undefined)
  return versionMatches(ifVersion, current) ? undefined : { ok: false, version: current }
}

function readPositive(name: string, value: number | undefined, fallback: number): number {
  const resolved = value ?? fallback
  if (!Number.isSafeInteger(resolved) || resolved < 1) throw storeError('INVALID_OPTIONS', `${name} must be a positive integer (got ${String(resolved)})`)
  return resolved
}

/**
 * A `DurableStore` in a directory (created if missing). Guarantees:
 * - a write is atomic and durable: temp file in the same directory, fsync, rename, fsync of
 *   the directory; a process killed mid-write (`kill -9`) leaves the old value or the new
 *   one, never a torn one;
 * - compare-and-set holds across processes sharing the directory: each write or delete
 *   reads, compares and commits under the key's lock file; a lock left by a killed process
 *   is broken (at once when its pid is gone on this host, else after `staleLockMs`);
 * - `list` reads names and version headers, never values.
 * Operations of one store instance on one key also queue in memory, so a burst from one
 * process does not spin on its own lock file.
 *
 * @example
 * ```ts
 * import { createFileStore } from 'toolyard/node'
 * const store = createFileStore('.toolyard/store')
 * const entry = await store.get('run/abc/journal')
 * await store.put('run/abc/journal', '[…]', { ifVersion: entry?.version ?? null })
 * ```
 */
export function createFileStore(directory: string, options?: FileStoreOptions): DurableStore {
  if (typeof directory !== 'string' || directory === '' || directory.includes('\0')) throw storeError('INVALID_OPTIONS', 'createFileStore needs a directory path')
  // Resolved once: a later process.chdir() must not move the store.
  const dir = resolve(directory)
  const maxValueBytes = resolveMaxValueBytes(options)
  const staleLockMs = readPositive('staleLockMs', options?.staleLockMs, DEFAULT_STALE_LOCK_MS)
  const locks = new KeyLocks(dir, staleLockMs, readPositive('lockTimeoutMs', options?.lockTimeoutMs, DEFAULT_LOCK_TIMEOUT_MS))
  let ready: Promise<void> | undefined
  // Once per store; a failure (say, a directory not yet mounted) is retried by the next call.
  const ensureDir = () =>
    (ready ??= mkdir(dir, { recursive: true })
      .then(() => sweepTempFiles(dir, staleLockMs))
      .catch((error: unknown) => {
        ready = undefined
        throw error
      }))
  const queues = new Map<string, Promise<unknown>>()

  /** Runs `body` after the previous operation on this key in this process, under the key's lock, unless `precheck` answers first. */
  const exclusive = <T>(hex: string, precheck: () => Promise<T | undefined>, body: () => Promise<T>): Promise<T> => {
    const run = (queues.get(hex) ?? Promise.resolve()).then(async () => {
      await ensureDir()
      return (await precheck()) ?? locks.withLock(hex, body)
    })
    const settled = run.then(
      () => {},
      () => {},
    )
    queues.set(hex, settled)
    void settled.then(() => {
      if (queues.get(hex) === settled) queues.delete(hex)
    })
    return run
  }
  const fail = (what: string) => (error: unknown) => {
    throw error instanceof ToolError
      ? error
      : storeError('STORE_FAILED', `the file store could not ${what}: ${String((error as Error)?.message ?? error)}`, error)
  }

  return {
    async get(key) {
      assertStoreKey(key)
      await ensureDir().catch(fail('open its directory'))
      return readRecord(join(dir, `${encodeKey(key)}.v`))
    },
    async put(key, value, writeOptions) {
      assertStoreKey(key)
      assertStoreValue(value, maxValueBytes)
      const ifVersion = readIfVersion(writeOptions)
      const hex = encodeKey(key)
      const file = join(dir, `${hex}.v`)
      return exclusive(hex, () => earlyConflict(file, ifVersion), async () => {
        const current = (await readRecord(file))?.version
        if (!versionMatches(ifVersion, current)) return { ok: false as const, version: current }
        const version = nextVersion(current)
        await writeAtomically(dir, file, `${HEADER}${version}\n${value}`)
        return { ok: true as const, version }
      }).catch(fail('write'))
    },
    async delete(key, writeOptions) {
      assertStoreKey(key)
      const ifVersion = readIfVersion(writeOptions)
      const hex = encodeKey(key)
      const file = join(dir, `${hex}.v`)
      return exclusive(hex, () => earlyConflict(file, ifVersion), async () => {
        const current = (await readRecord(file))?.version
        if (!versionMatches(ifVersion, current)) return { ok: false as const, version: current }
        if (current === undefined) return { ok: true as const }
        await unlink(file)
        await syncDirectory(dir)
        return { ok: true as const }
      }).catch(fail('delete'))
    },
    async list(prefix, listOptions) {
      assertStorePrefix(prefix)
      const { limit, after } = readListOptions(listOptions)
      await ensureDir().catch(fail('open its directory'))
      const keys: string[] = []
      for (const name of await readdir(dir).catch(fail('list its directory'))) {
        const match = VALUE_FILE.exec(name)
        if (match === null) continue
        const key = decodeKey(match[1]!)
        if (key.startsWith(prefix) && (after === undefined || key > after) && isKey(key)) keys.push(key)
      }
      keys.sort()
      const entries: { key: string; version: string }[] = []
      let index = 0
      for (; index < keys.length && entries.length < limit; index++) {
        const key = keys[index]!
        const version = await readVersion(join(dir, `${encodeKey(key)}.v`)).catch(fail('read a version'))
        if (version !== undefined) entries.push({ key, version })
      }
      return index < keys.length && entries.length > 0 ? { entries, cursor: entries[entries.length - 1]!.key } : { entries }
    },
  }
}
