/**
 * The server runs this page (or an earlier load of it) started, remembered across reloads
 * in `localStorage`: the server lists pending approvals by call id, but answers a run's
 * status only by its `/v1/runs` id, and there is no route that lists runs. So the page
 * keeps `{ runId, callId }` for the runs it started, and after a reload the "Waiting for
 * you" panel can follow the run a decision resumes.
 *
 * Bounded (the newest {@link MAX_KNOWN_RUNS}); whatever is read back is checked, never
 * trusted (another script of the origin could have written the key).
 *
 * @module
 */

/** A run the page started with `POST /v1/runs`. */
export interface KnownRun {
  /** The run's `/v1/runs` id (a lowercase UUID). */
  readonly runId: string
  /** Its `run_code` call's id: the `parentCallId` of its sub-calls' approvals, the `callId` of its plan request. */
  readonly callId: string
}

/** How many runs are remembered (the newest). */
export const MAX_KNOWN_RUNS = 50

const KEY = 'toolyard-playground-runs'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MAX_CALL_ID = 256

function isKnownRun(value: unknown): value is KnownRun {
  if (typeof value !== 'object' || value === null) return false
  const { runId, callId } = value as Record<string, unknown>
  return typeof runId === 'string' && UUID.test(runId) && typeof callId === 'string' && callId.length > 0 && callId.length <= MAX_CALL_ID
}

function read(): KnownRun[] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(KEY) ?? '[]')
    return Array.isArray(parsed) ? parsed.filter(isKnownRun).slice(-MAX_KNOWN_RUNS) : []
  } catch {
    // Storage disabled or a damaged value: the page simply knows no runs.
    return []
  }
}

/** Remembers a run this page started (the newest {@link MAX_KNOWN_RUNS} are kept). */
export function rememberRun(run: KnownRun): void {
  if (!isKnownRun(run)) return
  const runs = read().filter((known) => known.runId !== run.runId)
  runs.push({ runId: run.runId, callId: run.callId })
  try {
    localStorage.setItem(KEY, JSON.stringify(runs.slice(-MAX_KNOWN_RUNS)))
  } catch {
    // Storage full or disabled: the run still works, the panel just cannot follow it after a reload.
  }
}

/** The `/v1/runs` id of the run whose `run_code` call is `callId`, if this page started it. */
export function knownRunId(callId: string | undefined): string | undefined {
  if (callId === undefined) return undefined
  return read().find((known) => known.callId === callId)?.runId
}
