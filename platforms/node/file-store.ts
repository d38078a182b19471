/**
 * `createFileStore(dir)`: the `DurableStore` seam over one directory, shared safely by every
 * process that opens it.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { chmod, link, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises'
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
import { firstAtOrAfter } from '../../src/durable/_sorted-keys.js'
import { refuseUnknownOptions } from '../../src/util/unknown-field.js'

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

/** The file store: a {@link DurableStore}, plus what its listings had to skip. */
export interface FileStore extends DurableStore {
  /**
   * Entries listings skipped since the store was created: a value file that could not be
   * read as a record (a link, a FIFO, a directory, a file too large or without the header,
   * a name that decodes to no valid key). A listing never fails because of one.
   */
  skippedEntries(): number
}

const HEADER = 'toolyard-store/1 '
/** How long a directory must have been unchanged before a reading of its names is kept for the next listings. */
const LISTING_STABLE_MS = 3_000
const VALUE_FILE = /^((?:[0-9a-f]{2})+)\.v$/
const host = hostname()
/** Room for the header line beyond a value's bytes: the header, a version (`<seq>.<16 hex>`) and the newline. */
const HEADER_ROOM = 128
/** The most a lock or break-guard file holds (pid, host name, time, nonce as JSON). */
const MAX_LOCK_BYTES = 4096
/** Never follow a link, never wait on a FIFO or device (0 where the platform lacks the flag). */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)
/** Files the store creates: readable by its own user only, whatever the umask. */
const FILE_MODE = 0o600
const DIR_MODE = 0o700

const errorCode = (error: unknown): unknown => (error as { code?: unknown } | null)?.code
const nonce = () => randomBytes(8).toString('hex')
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Reads at most `maxBytes` of `file` as UTF-8, refusing (`STORE_FAILED`) anything but a regular
 * file that size allows.
 */
async function readBounded(file: string, maxBytes: number): Promise<string | undefined> {
  let handle
  try {
    handle = await open(file, READ_FLAGS)
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    if (errorCode(error) === 'ELOOP') throw storeError('STORE_FAILED', `the store file ${file} is a symbolic link; a store never follows one`, error)
    throw storeError('STORE_FAILED', `cannot open the store file ${file}`, error)
  }
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw storeError('STORE_FAILED', `the store file ${file} is not a regular file`)
    if (info.size > maxBytes) throw storeError('STORE_FAILED', `the store file ${file} holds ${info.size} bytes, more than a record can (${maxBytes})`)
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, info.size + 1))
    let length = 0
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
      if (bytesRead === 0) break
      length += bytesRead
    }
    if (length > maxBytes) throw storeError('STORE_FAILED', `the store file ${file} grew past ${maxBytes} bytes while it was read`)
    return buffer.subarray(0, length).toString('utf8')
  } finally {
    await handle.close()
  }
}

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

function parseRecord(text: string, file: string): StoreEntry {
  const end = text.indexOf('\n')
  if (!text.startsWith(HEADER) || end < 0) throw storeError('STORE_FAILED', `the store file ${file} is corrupt (no header)`)
  return { version: text.slice(HEADER.length, end), value: text.slice(end + 1) }
}

/** `<seq>.<nonce>`: the sequence makes versions of a key increase. */
function nextVersion(current: string | undefined): string {
  const seq = current === undefined ? 0 : Number.parseInt(current, 10)
  return `${Number.isSafeInteger(seq) ? seq + 1 : 1}.${nonce()}`
}

/** fsync of a directory makes a rename or unlink in it durable. */
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
  const handle = await open(temp, 'wx', FILE_MODE)
  try {
    try {
      // Explicitly: the mode given to open() is narrowed by the umask, never widened, but an odd umask could still drop the owner's bits.
      await handle.chmod(FILE_MODE)
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
 * Creates `path` holding `body` only if it does not exist, in one step: the body is written to a
 * temp file first, then hard-linked to `path` (`link` fails if `path` exists).
 */
async function createExclusive(dir: string, path: string, body: string): Promise<boolean> {
  const temp = join(dir, `.${nonce()}.tmp`)
  await writePrivate(temp, body)
  try {
    await link(temp, path)
    return true
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    if (!['EPERM', 'ENOTSUP', 'ENOSYS', 'EOPNOTSUPP'].includes(errorCode(error) as string)) throw error
    try {
      await writePrivate(path, body)
      return true
    } catch (fallback) {
      if (errorCode(fallback) === 'EEXIST') return false
      throw fallback
    }
  } finally {
    await unlink(temp).catch(() => {})
  }
}

/** Creates `path` (which must not exist) holding `body`, mode `0600` whatever the umask. */
async function writePrivate(path: string, body: string): Promise<void> {
  const handle = await open(path, 'wx', FILE_MODE)
  try {
    await handle.chmod(FILE_MODE)
    await handle.writeFile(body, 'utf8')
  } finally {
    await handle.close()
  }
}

interface LockFile {
  readonly body: string
  readonly mtimeMs: number
}

async function readLock(path: string): Promise<LockFile | undefined> {
  try {
    const [body, info] = await Promise.all([readBounded(path, MAX_LOCK_BYTES), stat(path)])
    return body === undefined ? undefined : { body, mtimeMs: info.mtimeMs }
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    // Not a lock this store wrote (a link, a FIFO, an oversized file): it ages out like an unreadable one.
    if (error instanceof ToolError) return { body: '', mtimeMs: (await stat(path).catch(() => undefined))?.mtimeMs ?? 0 }
    throw error
  }
}

/** Stale: older than the bound, or held by a process of this host that is gone. */
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
 * Per-key exclusion across processes: `<hex>.lock` created exclusively, already holding pid, host,
 * time and a nonce (see {@link createExclusive}).
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

/** Reads a key's record (at most `maxBytes`: a value's cap plus its header). */
async function readRecord(file: string, maxBytes: number): Promise<StoreEntry | undefined> {
  let text: string | undefined
  try {
    text = await readBounded(file, maxBytes)
  } catch (error) {
    if (error instanceof ToolError) throw error
    throw storeError('STORE_FAILED', `cannot read the store file ${file}`, error)
  }
  return text === undefined ? undefined : parseRecord(text, file)
}

/** Reads only a record's header line (its version), never its value. */
async function readVersion(file: string, maxBytes: number): Promise<string | undefined> {
  let handle
  try {
    handle = await open(file, READ_FLAGS)
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    throw error
  }
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw storeError('STORE_FAILED', `the store file ${file} is not a regular file`)
    if (info.size > maxBytes) throw storeError('STORE_FAILED', `the store file ${file} holds ${info.size} bytes, more than a record can (${maxBytes})`)
    const buffer = Buffer.alloc(HEADER.length + 64)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const text = buffer.subarray(0, bytesRead).toString('utf8')
    // The header line is at most ~60 bytes: no newline within the buffer means a corrupt file.
    return parseRecord(text, file).version
  } finally {
    await handle.close()
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

async function earlyConflict(file: string, ifVersion: string | null | undefined, maxBytes: number): Promise<{ ok: false; version: string | undefined } | undefined> {
  if (ifVersion === undefined) return undefined
  const current = await readVersion(file, maxBytes).catch(() => undefined)
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
/** The names {@link FileStoreOptions} holds: any other is refused, naming the closest. */
const FILE_STORE_OPTION_KEYS: readonly string[] = ['maxValueBytes', 'staleLockMs', 'lockTimeoutMs']

export function createFileStore(directory: string, options?: FileStoreOptions): FileStore {
  if (typeof directory !== 'string' || directory === '' || directory.includes('\0')) throw storeError('INVALID_OPTIONS', 'createFileStore needs a directory path')
  // Resolved once: a later process.chdir() must not move the store.
  const dir = resolve(directory)
  refuseUnknownOptions(options, FILE_STORE_OPTION_KEYS, (message) => {
    throw storeError('INVALID_OPTIONS', `createFileStore: ${message}`)
  })
  const maxValueBytes = resolveMaxValueBytes(options)
  const maxRecordBytes = maxValueBytes + HEADER_ROOM
  let skipped = 0
  const staleLockMs = readPositive('staleLockMs', options?.staleLockMs, DEFAULT_STALE_LOCK_MS)
  const locks = new KeyLocks(dir, staleLockMs, readPositive('lockTimeoutMs', options?.lockTimeoutMs, DEFAULT_LOCK_TIMEOUT_MS))
  let ready: Promise<void> | undefined
  // Once per store; a failure (say, a directory not yet mounted) is retried by the next call.
  const ensureDir = () =>
    (ready ??= mkdir(dir, { recursive: true, mode: DIR_MODE })
      // A directory this store created is 0700 whatever the umask; an existing one keeps its mode (never widened).
      .then((created) => (created === undefined ? undefined : chmod(dir, DIR_MODE)))
      .then(() => sweepTempFiles(dir, staleLockMs))
      .catch((error: unknown) => {
        ready = undefined
        throw error
      }))
  const queues = new Map<string, Promise<unknown>>()
  let listed: { readonly dev: bigint; readonly ino: bigint; readonly mtimeNs: bigint; readonly keys: readonly string[] } | undefined
  /**
   * The decoded names of the directory's value files, sorted. Read again only when the
   * directory's modification time moved (every write and delete renames or unlinks in it,
   * whichever process made them): an idle store's listing is a `stat`, not a read of every
   * name. A reading is kept only when the directory was last changed {@link LISTING_STABLE_MS}
   * before it (a change in the same tick of a coarse clock would leave the time as it was).
   */
  const directoryKeys = async (): Promise<readonly string[]> => {
    const before = await stat(dir, { bigint: true })
    if (listed !== undefined && listed.mtimeNs === before.mtimeNs && listed.ino === before.ino && listed.dev === before.dev) return listed.keys
    const keys: string[] = []
    for (const name of await readdir(dir)) {
      const match = VALUE_FILE.exec(name)
      if (match !== null) keys.push(decodeKey(match[1]!))
    }
    keys.sort()
    const stable = before.mtimeNs < BigInt(Date.now() - LISTING_STABLE_MS) * 1_000_000n
    listed = stable ? { dev: before.dev, ino: before.ino, mtimeNs: before.mtimeNs, keys } : undefined
    return keys
  }

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
      return readRecord(join(dir, `${encodeKey(key)}.v`), maxRecordBytes)
    },
    async put(key, value, writeOptions) {
      assertStoreKey(key)
      assertStoreValue(value, maxValueBytes)
      const ifVersion = readIfVersion(writeOptions)
      const hex = encodeKey(key)
      const file = join(dir, `${hex}.v`)
      return exclusive(hex, () => earlyConflict(file, ifVersion, maxRecordBytes), async () => {
        const current = await readVersion(file, maxRecordBytes)
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
      return exclusive(hex, () => earlyConflict(file, ifVersion, maxRecordBytes), async () => {
        const current = await readVersion(file, maxRecordBytes)
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
      const all = await directoryKeys().catch(fail('list its directory'))
      const keys: string[] = []
      // The keys starting with `prefix` are one run of the sorted names, from the first not before it.
      for (let i = firstAtOrAfter(all, after !== undefined && after >= prefix ? after : prefix); i < all.length && all[i]!.startsWith(prefix); i++) {
        const key = all[i]!
        if (after !== undefined && key <= after) continue
        if (isKey(key)) keys.push(key)
        else skipped++
      }
      const entries: { key: string; version: string }[] = []
      let index = 0
      for (; index < keys.length && entries.length < limit; index++) {
        const key = keys[index]!
        // One entry that cannot be read as a record (a link, a FIFO, a directory, a huge or headerless file) is skipped, never the listing's end.
        const version = await readVersion(join(dir, `${encodeKey(key)}.v`), maxRecordBytes).catch(() => {
          skipped++
          return undefined
        })
        if (version !== undefined) entries.push({ key, version })
      }
      return index < keys.length && entries.length > 0 ? { entries, cursor: entries[entries.length - 1]!.key } : { entries }
    },
    skippedEntries: () => skipped,
  }
}
