/**
 * "On the server": the HTTP API of `npm start` (docs/http-api.md). The page finds the
 * bearer token in the `<meta name="toolyard-token">` the server injects into the page it
 * serves (same origin); opened any other way, the server is simply unreachable and the
 * page says so. Runs are background runs (`POST /v1/runs`, so a reload does not end
 * them) followed over their server-sent events (`GET /v1/runs/:id/events`), their
 * sub-calls' approvals included (`approval`, `approval-settled`); Abort is
 * `DELETE /v1/runs/:id`; Allow / Deny answer with
 * `POST /v1/approvals/:id`. A native call that waits for a person is found by polling
 * `GET /v1/approvals` for its call id (a JSON call has no event stream).
 *
 * @module
 */
import type { PendingApproval } from '../../src/approvals/types.js'
import type { CodeLogEntry } from '../../src/code-runtime/contract.js'
import type { ApprovalSettledData } from '../../src/http/_approvals.js'
import type { JsonValue } from '../../src/json/json-value.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent } from '../../src/runtime-types.js'
import type { ToolExecutionResult, ToolPresentationMode } from '../../src/types.js'
import type { ApprovalListener, Backend, ProgramLanguage, RunBudgets, RunListener, RunOutcome } from './backend.js'
import { rememberRun } from './known-runs.js'

/** Where the server is and how to talk to it. */
export interface ServerInfo {
  readonly api: string
  readonly token: string | undefined
}

/** The server's state as the page shows it. */
export type ServerStatus = { readonly up: true } | { readonly up: false; readonly why: string }

function meta(name: string): string | undefined {
  const value = document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content
  return value === undefined || value === '' ? undefined : value
}

/** Reads the API base and token the server injected into this page. */
export function serverInfo(): ServerInfo {
  return { api: (meta('toolyard-api') ?? '/v1').replace(/\/$/, ''), token: meta('toolyard-token') }
}

/** Checks `GET /health` and that the token is accepted. Never throws. */
export async function checkServer(info: ServerInfo): Promise<ServerStatus> {
  if (location.protocol === 'file:') return { up: false, why: 'the page was opened from a file' }
  try {
    const health = await fetch(`${info.api}/health`, { signal: AbortSignal.timeout(3000) })
    if (!health.ok) return { up: false, why: `health check answered ${health.status}` }
    if (info.token === undefined) return { up: false, why: 'no API token on this page (open the URL npm start prints)' }
    const tools = await fetch(`${info.api}/tools`, { headers: { Authorization: `Bearer ${info.token}` }, signal: AbortSignal.timeout(3000) })
    if (!tools.ok) return { up: false, why: `the server refused the token (${tools.status})` }
    return { up: true }
  } catch (error) {
    return { up: false, why: error instanceof Error && error.name === 'TimeoutError' ? 'no answer within 3 s' : 'no server at this origin' }
  }
}

async function errorOf(response: Response): Promise<Error> {
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } }
    return new Error(`${body.error?.code ?? response.status}: ${body.error?.message ?? response.statusText}`)
  } catch {
    return new Error(`the server answered ${response.status}`)
  }
}

/** Splits a server-sent-event stream into `{ event, data }` frames. */
async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).getReader()
  let buffer = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += value
      let end = buffer.indexOf('\n\n')
      while (end !== -1) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        let event = 'message'
        const data: string[] = []
        for (const line of frame.split('\n')) {
          if (line.startsWith(':')) continue
          if (line.startsWith('event:')) event = line.slice(6).trim()
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart())
        }
        if (data.length > 0) yield { event, data: data.join('\n') }
        end = buffer.indexOf('\n\n')
      }
    }
  } finally {
    reader.releaseLock()
  }
}

function abortedResult(): ToolExecutionResult {
  const message = 'code run failed (abort): the run was aborted (the page closed the request; the server aborted the run)'
  return {
    isError: true,
    error: { message, info: { name: 'CodeRunFailedError', code: 'CODE_RUN_FAILED' } },
    content: [{ type: 'text', text: `Error: ${message}` }],
  }
}

/** How often a native call that may be waiting for a person looks for its approval request. */
const APPROVAL_POLL_MS = 250

/**
 * Reports the approval request of the native call `callId` (once) while `until` is
 * pending: a JSON call has no event stream, so the page asks `GET /v1/approvals`.
 */
async function watchApprovals(info: ServerInfo, callId: string, listener: ApprovalListener, until: Promise<unknown>): Promise<void> {
  let done = false
  const stop = (): void => {
    done = true
  }
  // The call's own rejection is the caller's to handle; here it only stops the polling.
  until.then(stop, stop)
  let reported: PendingApproval | undefined
  while (!done) {
    await new Promise((resolve) => setTimeout(resolve, APPROVAL_POLL_MS))
    if (done) return
    try {
      const response = await fetch(`${info.api}/approvals`, { headers: info.token === undefined ? {} : { Authorization: `Bearer ${info.token}` } })
      if (!response.ok) return
      const { approvals } = (await response.json()) as { approvals: PendingApproval[] }
      const mine = approvals.find((approval) => approval.callId === callId)
      if (mine !== undefined && reported?.id !== mine.id) {
        reported = mine
        if (!done) listener.approval(mine)
      }
    } catch {
      // The call's own answer will say what happened.
    }
  }
}

/** A run's status as `GET /v1/runs/:id` answers it (the fields the page reads). */
export interface ServerRunView {
  readonly id: string
  readonly callId: string
  readonly status: 'running' | 'waiting' | 'done' | 'failed' | 'cancelled'
  readonly result?: ToolExecutionResult
}

/** The requests `GET /v1/approvals` listed, and whether more wait than it listed. */
export type WaitingApprovals = PendingApproval[] & { readonly truncated?: true }

/** The server backend, plus what the "Waiting for you" panel asks of the server. */
export interface ServerBackend extends Backend {
  /**
   * `GET /v1/approvals`: every request waiting for a person, whoever's run made it;
   * `truncated: true` on the array when the server's listing stopped at a bound (it lists
   * the oldest 500): more wait than are listed.
   */
  pendingApprovals(): Promise<WaitingApprovals>
  /** `GET /v1/runs/:id`. */
  runStatus(runId: string, signal?: AbortSignal): Promise<ServerRunView>
  /** Whether `request` belongs to a run or native call this page is running now (its card shows it). */
  owns(request: Pick<PendingApproval, 'callId' | 'parentCallId'>): boolean
}

/** How often a run whose event stream broke is looked up, and how long the server may stay unreachable meanwhile. */
const RUN_POLL_MS = 1_000
const RUN_UNREACHABLE_MS = 120_000

const ENDED_STATUSES: ReadonlySet<ServerRunView['status']> = new Set(['done', 'failed', 'cancelled'])

/** Dispatches one frame of a run's event stream to `listener`; returns the result when the frame carries it. */
function dispatchFrame(frame: { event: string; data: string }, listener: RunListener, logs: { streamed: boolean }): ToolExecutionResult | undefined {
  const data = JSON.parse(frame.data) as unknown
  switch (frame.event) {
    case 'dispatch-start':
      listener.dispatchStart(data as CodeDispatchStartEvent)
      break
    case 'dispatch':
      listener.dispatch(data as CodeDispatchEvent)
      break
    case 'approval':
      listener.approval(data as PendingApproval)
      break
    case 'approval-settled':
      listener.approvalSettled(data as ApprovalSettledData)
      break
    case 'log':
      logs.streamed = true
      listener.log((data as { entry: CodeLogEntry }).entry)
      break
    case 'result':
      return data as ToolExecutionResult
  }
  return undefined
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done(): void {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}

/** Creates the server backend for `info`. */
export function createServerBackend(info: ServerInfo): ServerBackend {
  const headers = (): Record<string, string> => ({
    'Content-Type': 'application/json',
    ...(info.token === undefined ? {} : { Authorization: `Bearer ${info.token}` }),
  })
  // The call ids of this page's runs and native calls in flight: their requests show on their own cards.
  const active = new Set<string>()

  async function runStatus(runId: string, signal?: AbortSignal): Promise<ServerRunView> {
    const response = await fetch(`${info.api}/runs/${encodeURIComponent(runId)}`, { headers: headers(), ...(signal === undefined ? {} : { signal }) })
    if (!response.ok) throw await errorOf(response)
    return (await response.json()) as ServerRunView
  }

  /** Follows the run's events; `undefined` when the stream ended (or broke) without a result. */
  async function follow(runId: string, listener: RunListener, logs: { streamed: boolean }, signal: AbortSignal): Promise<ToolExecutionResult | undefined> {
    try {
      const response = await fetch(`${info.api}/runs/${encodeURIComponent(runId)}/events`, { headers: { ...headers(), Accept: 'text/event-stream' }, signal })
      if (!response.ok || response.body === null) return undefined
      for await (const frame of sseFrames(response.body)) {
        // `error` (a frame too large for the stream) and `end` close the stream: the run's record has the rest.
        if (frame.event === 'error') return undefined
        const result = dispatchFrame(frame, listener, logs)
        if (result !== undefined) return result
      }
    } catch {
      // A broken connection (the server restarted, the network dropped): the run's record says how it goes on.
    }
    return undefined
  }

  /** Looks the run up until it has ended: its stream broke (the server restarted, a connection dropped). */
  async function poll(runId: string, signal: AbortSignal): Promise<ToolExecutionResult | undefined> {
    let reachedAt = Date.now()
    while (!signal.aborted) {
      try {
        const run = await runStatus(runId, signal)
        reachedAt = Date.now()
        if (ENDED_STATUSES.has(run.status)) {
          if (run.result === undefined) throw new Error(`the run ended ${run.status} without a result`)
          return run.result
        }
      } catch (error) {
        if (signal.aborted) return undefined
        if (error instanceof Error && /^(RUN_NOT_FOUND|the run ended)/.test(error.message)) throw error
        if (Date.now() - reachedAt > RUN_UNREACHABLE_MS) throw new Error(`the server has been unreachable for ${RUN_UNREACHABLE_MS / 1000} s (run ${runId})`)
      }
      await sleep(RUN_POLL_MS, signal)
    }
    return undefined
  }

  return {
    where: 'server',
    // A background run (POST /v1/runs), not one held by this request: a reload or a closed
    // tab leaves it running, and its requests wait in GET /v1/approvals for the panel.
    async run(code: string, language: ProgramLanguage, mode: ToolPresentationMode, _budgets: RunBudgets, listener: RunListener, signal: AbortSignal): Promise<RunOutcome> {
      let started: { id: string; callId: string }
      try {
        const response = await fetch(`${info.api}/runs`, { method: 'POST', headers: headers(), body: JSON.stringify({ code, language, description: 'a playground run', agent: mode }), signal })
        if (!response.ok) throw await errorOf(response)
        started = (await response.json()) as { id: string; callId: string }
      } catch (error) {
        if (signal.aborted) return { result: abortedResult(), streamedLogs: false }
        throw error instanceof TypeError ? new Error(`the server is unreachable (${error.message})`) : error
      }
      active.add(started.callId)
      rememberRun({ runId: started.id, callId: started.callId })
      // Abort cancels the run on the server (the stream closing would not).
      const cancel = (): void => {
        void fetch(`${info.api}/runs/${encodeURIComponent(started.id)}`, { method: 'DELETE', headers: headers(), keepalive: true }).catch(() => undefined)
      }
      signal.addEventListener('abort', cancel, { once: true })
      const logs = { streamed: false }
      try {
        const result = (await follow(started.id, listener, logs, signal)) ?? (await poll(started.id, signal))
        if (result === undefined || signal.aborted) return { result: abortedResult(), streamedLogs: logs.streamed }
        return { result, streamedLogs: logs.streamed }
      } finally {
        signal.removeEventListener('abort', cancel)
        active.delete(started.callId)
      }
    },
    async execute(name: string, args: JsonValue, mode: ToolPresentationMode, signal: AbortSignal, approvals?: ApprovalListener): Promise<ToolExecutionResult> {
      // Our own call id, so the page can find this call's approval request.
      const callId = `page-call-${crypto.randomUUID()}`
      const call = fetch(`${info.api}/tools/${encodeURIComponent(name)}/execute`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({ arguments: args, agent: mode, callId }),
        signal,
      })
      active.add(callId)
      try {
        if (approvals !== undefined) void watchApprovals(info, callId, approvals, call)
        const response = await call
        if (!response.ok) throw await errorOf(response)
        return (await response.json()) as ToolExecutionResult
      } finally {
        active.delete(callId)
      }
    },
    async decide(id: string, decision: 'allow' | 'deny'): Promise<void> {
      const response = await fetch(`${info.api}/approvals/${encodeURIComponent(id)}`, { method: 'POST', headers: headers(), body: JSON.stringify({ decision }) })
      if (!response.ok) throw await errorOf(response)
      await response.body?.cancel()
    },
    async pendingApprovals(): Promise<WaitingApprovals> {
      const response = await fetch(`${info.api}/approvals`, { headers: headers() })
      if (!response.ok) throw await errorOf(response)
      const { approvals, truncated } = (await response.json()) as { approvals?: unknown; truncated?: unknown }
      const listed: WaitingApprovals = Array.isArray(approvals) ? (approvals as PendingApproval[]) : []
      return truncated === true ? Object.assign(listed, { truncated: true as const }) : listed
    },
    runStatus,
    owns(request): boolean {
      return active.has(request.callId) || (request.parentCallId !== undefined && active.has(request.parentCallId))
    },
  }
}
