/**
 * "On the server": the HTTP API of `npm start` (docs/http-api.md). The page finds the
 * bearer token in the `<meta name="toolyard-token">` the server injects into the page it
 * serves (same origin); opened any other way, the server is simply unreachable and the
 * page says so. Runs stream over server-sent events (`POST /v1/run`), their sub-calls'
 * approvals included (`approval`, `approval-settled`); Allow / Deny answer with
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
import type { ApprovalListener, Backend, RunBudgets, RunListener, RunOutcome } from './backend.js'

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

/** Creates the server backend for `info`. */
export function createServerBackend(info: ServerInfo): Backend {
  const headers = (): Record<string, string> => ({
    'Content-Type': 'application/json',
    ...(info.token === undefined ? {} : { Authorization: `Bearer ${info.token}` }),
  })
  return {
    where: 'server',
    async run(code: string, mode: ToolPresentationMode, _budgets: RunBudgets, listener: RunListener, signal: AbortSignal): Promise<RunOutcome> {
      let response: Response
      try {
        response = await fetch(`${info.api}/run`, {
          method: 'POST',
          headers: { ...headers(), Accept: 'text/event-stream' },
          body: JSON.stringify({ code, description: 'a playground run', agent: mode }),
          signal,
        })
      } catch (error) {
        if (signal.aborted) return { result: abortedResult(), streamedLogs: false }
        throw new Error(`the server is unreachable (${error instanceof Error ? error.message : String(error)})`)
      }
      if (!response.ok || response.body === null) throw await errorOf(response)
      let result: ToolExecutionResult | undefined
      let streamedLogs = false
      try {
        for await (const frame of sseFrames(response.body)) {
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
              streamedLogs = true
              listener.log((data as { entry: CodeLogEntry }).entry)
              break
            case 'result':
              result = data as ToolExecutionResult
              break
            case 'error':
              throw new Error(`the server failed the run: ${(data as { error?: { message?: string } }).error?.message ?? 'internal error'}`)
          }
        }
      } catch (error) {
        if (signal.aborted) return { result: abortedResult(), streamedLogs }
        throw error
      }
      if (result === undefined) {
        if (signal.aborted) return { result: abortedResult(), streamedLogs }
        throw new Error('the server closed the stream without a result')
      }
      return { result, streamedLogs }
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
      if (approvals !== undefined) void watchApprovals(info, callId, approvals, call)
      const response = await call
      if (!response.ok) throw await errorOf(response)
      return (await response.json()) as ToolExecutionResult
    },
    async decide(id: string, decision: 'allow' | 'deny'): Promise<void> {
      const response = await fetch(`${info.api}/approvals/${encodeURIComponent(id)}`, { method: 'POST', headers: headers(), body: JSON.stringify({ decision }) })
      if (!response.ok) throw await errorOf(response)
      await response.body?.cancel()
    },
  }
}
