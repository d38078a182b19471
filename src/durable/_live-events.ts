/**
 * A run's event frames across instances: the process running it writes its new frames to the
 * store in chunks (`run-live/<run>/<first id>`), and another instance's events stream follows
 * them, woken by the store's `watch` (PostgreSQL `LISTEN`) and by polling. docs/deployment.md.
 * @module
 */
import type { RunEventFrame, RunEventLog, RunEventsSince } from './run-table.js'
import type { DurableStore } from './store.js'
import { parseStoredJson } from './stored-json.js'

/** Where live chunks are kept: `run-live/<run id>/<first frame id, 15 digits>`. */
export const LIVE_EVENTS_PREFIX = 'run-live/'
/** The most frame bytes one chunk holds (a store value is at least this large). */
export const LIVE_CHUNK_BYTES = 64 * 1024
/** How long a finished run's chunks stay for late followers before they are deleted. */
export const LIVE_LINGER_MS = 60_000
/** How often a follower reads the store without a notification (a dropped `LISTEN`, a missed wake-up). */
export const LIVE_POLL_MS = 1_000

/** A store that can say when keys change (the PostgreSQL store's `watch`). */
export interface WatchableStore extends DurableStore {
  watch(prefix: string, onChange: (key: string) => void): () => void
}

/** What a chunk holds: frames in id order, and whether the run's log closed after them. */
interface LiveChunk {
  readonly frames: readonly RunEventFrame[]
  readonly closed: boolean
}

/** A run streamed from another instance: what `GET /v1/runs/:id/events` reads. */
export interface FollowedRun {
  readonly id: string
  readonly events: RunEventLog
  /** Stops reading the store (the stream ended). Idempotent. */
  stop(): void
}

/** Live frames over one store: the runner's side ({@link LiveEvents.publish}) and the reader's ({@link LiveEvents.follow}). */
export interface LiveEvents {
  /** Writes `log`'s frames (those held now, then each new one) until it closes; failures go to `report`. Returns the stop. */
  publish(runId: string, log: RunEventLog, report: (error: unknown) => void): () => void
  /**
   * Follows the frames another instance writes for `runId`, holding at most `maxBytes` of
   * them; `ended()` is asked on each poll (the run's record settled: no more frames come,
   * even from a process that died before its last chunk). Resolves after the first read.
   */
  follow(runId: string, maxBytes: number, ended: () => Promise<boolean>): Promise<FollowedRun>
}

/** Whether `store` can be watched (cross-instance wake-ups). */
export function isWatchable(store: DurableStore): store is WatchableStore {
  return typeof (store as Partial<WatchableStore>).watch === 'function'
}

// What a run's log writes (`createRunEventLog`): one event name, its id, one line of JSON.
const FRAME = /^event: [a-z-]{1,40}\nid: [1-9][0-9]{0,15}\ndata: [^\n\r]*\n\n$/

const chunkKey = (runId: string, firstId: number): string => `${LIVE_EVENTS_PREFIX}${runId}/${String(firstId).padStart(15, '0')}`

/** A chunk read back, or `undefined` for anything that is not one (the store is shared: read as hostile). */
async function readChunk(text: string): Promise<LiveChunk | undefined> {
  try {
    const value = (await parseStoredJson(text)) as { frames?: unknown; closed?: unknown } | null
    if (typeof value !== 'object' || value === null || !Array.isArray(value.frames)) return undefined
    const frames: RunEventFrame[] = []
    for (const pair of value.frames as unknown[]) {
      if (!Array.isArray(pair) || !Number.isSafeInteger(pair[0]) || (pair[0] as number) < 1 || typeof pair[1] !== 'string') return undefined
      // A frame is an SSE event with its own id line: nothing else may reach a client.
      const text = pair[1]
      if (!FRAME.test(text) || !text.includes(`\nid: ${pair[0] as number}\ndata: `)) return undefined
      frames.push({ id: pair[0] as number, text })
    }
    return { frames, closed: value.closed === true }
  } catch {
    return undefined
  }
}

/** Live events over `store`, or `undefined` when it cannot be watched (one process: its table has every run). */
export function createLiveEvents(store: DurableStore): LiveEvents | undefined {
  if (!isWatchable(store)) return undefined
  return { publish: (runId, log, report) => publish(store, runId, log, report), follow: (runId, maxBytes, ended) => follow(store, runId, maxBytes, ended) }
}

function publish(store: DurableStore, runId: string, log: RunEventLog, report: (error: unknown) => void): () => void {
  let cursor = 0
  let writing = false
  let stopped = false
  // The chunks written, oldest first, and their bytes: past the log's own bound the oldest go.
  const written: { key: string; bytes: number }[] = []
  let heldBytes = 0
  // Whether the newest frame written is the run's `end`: only then do followers close (a log closed without it was left for the next process, which goes on writing).
  let endWritten = false
  const flush = async (): Promise<void> => {
    for (;;) {
      const { frames } = log.since(cursor, LIVE_CHUNK_BYTES)
      const done = log.closed && (frames.at(-1)?.id ?? cursor) >= log.last
      if (frames.length === 0 && !done) return
      const ends = frames.length === 0 ? endWritten : frames.at(-1)!.text.startsWith('event: end\n')
      if (frames.length === 0 && !ends) return stop()
      const value = JSON.stringify({ frames: frames.map((frame) => [frame.id, frame.text]), ...(done && ends ? { closed: true } : {}) })
      const key = chunkKey(runId, frames[0]?.id ?? cursor + 1)
      await store.put(key, value)
      written.push({ key, bytes: value.length })
      heldBytes += value.length
      cursor = frames.at(-1)?.id ?? cursor
      endWritten = ends
      while (heldBytes > log.bytes + LIVE_CHUNK_BYTES && written.length > 1) {
        const oldest = written.shift()!
        heldBytes -= oldest.bytes
        await store.delete(oldest.key)
      }
      if (done) {
        stop()
        // A run left for the next process keeps its chunks (that process continues them); an ended one's go after a while.
        if (!ends) return
        const linger = setTimeout(() => void Promise.all(written.map(({ key }) => store.delete(key))).catch(report), LIVE_LINGER_MS)
        ;(linger as { unref?: () => void }).unref?.()
        return
      }
    }
  }
  const kick = (): void => {
    if (writing || stopped) return
    writing = true
    void flush()
      .catch(report)
      .finally(() => {
        writing = false
        // Frames that came during the write: one more round (a burst costs one write per round trip).
        if (!stopped && (log.last > cursor || log.closed)) kick()
      })
  }
  const unsubscribe = log.subscribe(() => kick())
  const stop = (): void => {
    stopped = true
    unsubscribe()
  }
  kick()
  return stop
}

async function follow(store: WatchableStore, runId: string, maxBytes: number, ended: () => Promise<boolean>): Promise<FollowedRun> {
  const log = mirrorLog(maxBytes)
  const prefix = `${LIVE_EVENTS_PREFIX}${runId}/`
  let after: string | undefined
  let reading: Promise<void> | undefined
  let again = false
  let stopped = false
  const readNew = async (): Promise<void> => {
    for (;;) {
      const page = await store.list(prefix, { limit: 100, ...(after === undefined ? {} : { after }) })
      for (const { key } of page.entries) {
        after = key
        const entry = await store.get(key)
        const chunk = entry === undefined ? undefined : await readChunk(entry.value)
        if (chunk === undefined) continue
        for (const frame of chunk.frames) log.push(frame)
        if (chunk.closed) log.close()
      }
      if (page.cursor === undefined || page.entries.length === 0) return
    }
  }
  const read = (): Promise<void> => {
    if (reading !== undefined) {
      again = true
      return reading
    }
    reading = (async () => {
      do {
        again = false
        await readNew().catch(() => undefined)
      } while (again && !stopped)
    })().finally(() => (reading = undefined))
    return reading
  }
  const unwatch = store.watch(prefix, () => void read())
  const poll = setInterval(() => {
    void read().then(async () => {
      if (!log.closed && !stopped && (await ended().catch(() => false))) {
        await read()
        log.close()
      }
    })
  }, LIVE_POLL_MS)
  ;(poll as { unref?: () => void }).unref?.()
  const stop = (): void => {
    stopped = true
    clearInterval(poll)
    unwatch()
  }
  await read()
  return { id: runId, events: log, stop }
}

/** A {@link RunEventLog} fed with frames another process numbered: ids only grow, bounded by `maxBytes`. */
function mirrorLog(maxBytes: number): RunEventLog & { push(frame: RunEventFrame): void } {
  const frames: (RunEventFrame & { readonly bytes: number })[] = []
  let last = 0
  let bytes = 0
  let dropped = 0
  let closed = false
  const listeners = new Set<(frame: RunEventFrame) => void>()
  const tell = (frame: RunEventFrame): void => {
    for (const listener of [...listeners]) {
      try {
        listener(frame)
      } catch {
        // A reader's failure is its own.
      }
    }
  }
  return {
    push(frame) {
      if (closed || frame.id <= last) return
      last = frame.id
      const size = frame.text.length
      frames.push({ ...frame, bytes: size })
      bytes += size
      while (bytes > maxBytes && frames.length > 1) {
        bytes -= frames.shift()!.bytes
        dropped++
      }
      tell(frame)
    },
    append() {
      return last
    },
    pinRest() {},
    close() {
      if (closed) return
      closed = true
      tell({ id: last, text: '' })
      listeners.clear()
    },
    get closed() {
      return closed
    },
    since(lastId: number, limit = Number.POSITIVE_INFINITY): RunEventsSince {
      const out: RunEventFrame[] = []
      let taken = 0
      let next: number | undefined
      for (const frame of frames) {
        if (frame.id <= lastId) continue
        next ??= frame.id
        if (out.length > 0 && taken + frame.bytes > limit) break
        taken += frame.bytes
        out.push({ id: frame.id, text: frame.text })
      }
      const start = next ?? last + 1
      return lastId + 1 >= start ? { frames: out } : { gap: { first: lastId + 1, last: start - 1 }, frames: out }
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    get first() {
      return frames[0]?.id ?? last + 1
    },
    get last() {
      return last
    },
    get dropped() {
      return dropped
    },
    get bytes() {
      return bytes
    },
    get subscriberCount() {
      return listeners.size
    },
  }
}
