/**
 * `ToolyardRun`: the Durable Object that owns one `/v1/runs` run at the edge and resumes it
 * from its storage after eviction (docs/deployment.md, "Durable runs").
 *
 * @module
 */
import type { Hono } from 'hono'
import { askBeforeWriting } from '../../demo/tools/approval-gate.js'
import { SEED_FILES, createShopData, createShopTools, createWorkspace, createWorkspaceTools, type Workspace } from '../../demo/tools/index.js'
import type { ApprovalBroker } from '../../src/approvals/index.js'
import { runKeySegment } from '../../src/durable/runs.js'
import type { DurableStore } from '../../src/durable/store.js'
import { createToolsApp, DEFAULT_RUN_RETENTION_MS, httpErrorResponse } from '../../src/http/index.js'
import { interruptedRunResult, RUN_CALL_ID_PREFIX } from '../../src/durable/run-table.js'
import type { RunRecordStore } from '../../src/durable/run-table.js'
import { parseStoredJson } from '../../src/durable/stored-json.js'
import { createToolRuntime } from '../../src/registry/index.js'
import type { ToolRuntime } from '../../src/runtime-types.js'
import type { AnyToolDefinition } from '../../src/types.js'
import { createDurableObjectStore, type DurableObjectStorageLike } from './durable-object-store.js'
import { approvalTimeoutOption, buildEdgeApp, createEdgeCodeRuntimes, EDGE_CODE_LIMITS, edgeTelemetry, RUN_ID, RUN_OBJECT_APPROVAL_POLL_MS, tokenPrincipal, type EdgeEnv } from './_edge-app.js'
import { createIndexStore, createRunIndexStore } from './run-index.js'

/** The header carrying the run's public id from the Worker to its object (the Worker drops any a client sent). */
export const RUN_ID_HEADER = 'X-Toolyard-Edge-Run'
/**
 * On `GET /v1/runs/:id`: `stored` when the run's parked state is in the object's storage,
 * so a restart of the object resumes it from there (absent before its first park and once
 * it ended).
 */
export const RUN_STATE_HEADER = 'X-Toolyard-Run-State'
/** Where the index says which object owns a run's call id: `edge-runs/<call id segment>` → the run's public id. */
export const OWNER_PREFIX = 'edge-runs/'
/**
 * Where the index says who started a run: `edge-run-ids/<public id>` → the starter's
 * principal id, written before the run's 202 and removed with the object's storage. The
 * Worker forwards a request naming a run id only when this entry exists (worker.ts), so an
 * id a client typed never creates an object.
 */
export const RUN_OWNER_PREFIX = 'edge-run-ids/'

/** The part of a Durable Object's state this class uses (`ctx`), typed locally. */
export interface RunObjectState {
  readonly storage: DurableObjectStorageLike & {
    setAlarm(at: number): Promise<void>
    getAlarm(): Promise<number | null>
    deleteAll(): Promise<void>
  }
  waitUntil(promise: Promise<unknown>): void
}

/** What the object keeps about its run besides the runtime's records. */
interface RunInfo {
  /** The public id (the object's name). */
  readonly id: string
  /** The id the app's run table gave it: the uuid of its call id (`http-run-<appId>`). */
  readonly appId: string
  /** The `run_code` call's id. */
  readonly callId: string
}

interface Built {
  readonly app: Hono
  readonly runtime: ToolRuntime
  readonly broker: ApprovalBroker
  readonly index: DurableStore
  /** The runtime's store over this object's storage. */
  readonly store: DurableStore
  /** Settles when the runs resumed by this instance have ended. */
  readonly resumed: Promise<unknown>
}

const INFO_KEY = 'toolyard-run:info'
const WORKSPACE_KEY = 'toolyard-run:workspace'
/** An alarm fires this long after an approval's expiry: the broker's own timer goes first when the object is alive. */
const ALARM_SLACK_MS = 1_000

function runNotFound(id: string): Response {
  return httpErrorResponse('RUN_NOT_FOUND', `no run ${id} (never started here, or evicted after its retention)`)
}

/**
 * The demo tools over this object's workspace. The writing tools save the whole workspace
 * in the object's storage before they return, so the save is part of the call: a call
 * recorded done has its write stored, and a restart sees it.
 */
function demoTools(workspace: Workspace, storage: DurableObjectStorageLike): AnyToolDefinition[] {
  const save = () => storage.put({ [WORKSPACE_KEY]: JSON.stringify(Object.fromEntries(workspace.files)) })
  const workspaceTools = createWorkspaceTools(workspace).map((tool) =>
    tool.name === 'write_file' || tool.name === 'edit_file'
      ? {
          ...tool,
          async execute(...args: Parameters<typeof tool.execute>) {
            const value = await tool.execute(...args)
            await save()
            return value
          },
        }
      : tool,
  )
  return [...workspaceTools, ...createShopTools(createShopData())]
}

/** The saved workspace (`{ path: text }`); a value that is not one starts from the seed files rather than breaking the object. */
async function readWorkspace(text: string): Promise<Readonly<Record<string, string>>> {
  try {
    const files = await parseStoredJson(text)
    if (typeof files === 'object' && files !== null && !Array.isArray(files) && Object.values(files).every((v) => typeof v === 'string')) return files as Record<string, string>
  } catch {
    // Not JSON: below.
  }
  return SEED_FILES
}

/** Replaces every `from` (a UUID, same length as `to`) not right after `unless` in a streamed UTF-8 body, across chunk edges. */
function replaceInStream(body: ReadableStream<Uint8Array>, from: string, to: string, unless: string): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder()
  const encoder = new TextEncoder()
  const pattern = new RegExp(`(?<!${unless})${from}`, 'g')
  // `context`: the end of what was sent, so a `from` kept back is judged with what precedes it.
  let context = ''
  let carry = ''
  const step = (input: string, last: boolean): string => {
    const text = (context + carry + input).replace(pattern, to).slice(context.length)
    // Keep the tail that could be the start of a `from` split across chunks.
    const keep = last ? 0 : Math.min(text.length, from.length - 1)
    carry = text.slice(text.length - keep)
    const out = text.slice(0, text.length - keep)
    context = (context + out).slice(-(unless.length + from.length))
    return out
  }
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const out = step(decoder.decode(chunk, { stream: true }), false)
        if (out !== '') controller.enqueue(encoder.encode(out))
      },
      flush(controller) {
        const rest = step(decoder.decode(), true)
        if (rest !== '') controller.enqueue(encoder.encode(rest))
      },
    }),
  )
}

/**
 * The app's answer with its run id shown as the public one: the table's id is the
 * object's own business. Both are UUIDs (36 ASCII characters), so lengths do not change.
 */
function publicResponse(response: Response, info: RunInfo): Response {
  const headers = new Headers(response.headers)
  const location = headers.get('Location')
  if (location !== null) headers.set('Location', location.replaceAll(info.appId, info.id))
  // The run's call id holds the table's id (`http-run-<appId>`): it stays as it is.
  const body = response.body === null ? null : replaceInStream(response.body, info.appId, info.id, RUN_CALL_ID_PREFIX)
  return new Response(body, { status: response.status, statusText: response.statusText, headers })
}

/** The Durable Object owning one run. */
export class ToolyardRun {
  readonly #ctx: RunObjectState
  readonly #env: EdgeEnv
  #built: Promise<Built> | undefined
  /** The `run_code` calls that ended in this instance. */
  readonly #endedCalls = new Set<string>()

  constructor(ctx: RunObjectState, env: EdgeEnv) {
    this.#ctx = ctx
    this.#env = env
  }

  /** Serves the run's requests and the decisions on its approvals (forwarded by the Worker). */
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    // Building resumes the run when this instance is new (the object was evicted or restarted).
    const built = await this.#build()
    const id = request.headers.get(RUN_ID_HEADER) ?? ''
    if (!RUN_ID.test(id)) return runNotFound('(unnamed)')
    const inner = new Headers(request.headers)
    inner.delete(RUN_ID_HEADER)
    if (request.method === 'POST' && /^\/v1\/approvals\/[^/]+$/.test(url.pathname)) {
      // Decided through this object's broker: the waiting call (resumed above if need be) hears it at once.
      this.#ctx.waitUntil(built.resumed)
      return built.app.fetch(new Request(request, { headers: inner }), this.#env, this.#executionContext())
    }
    const info = await this.#info()
    if (request.method === 'POST' && url.pathname === '/v1/runs') {
      if (info !== undefined) return httpErrorResponse('INVALID_REQUEST', `run ${id} was started already`)
      return this.#start(built, id, new Request(request, { headers: inner }))
    }
    if (info === undefined || info.id !== id) return runNotFound(id)
    url.pathname = url.pathname.replace(`/v1/runs/${id}`, `/v1/runs/${info.appId}`)
    const response = publicResponse(await built.app.fetch(new Request(url, new Request(request, { headers: inner })), this.#env, this.#executionContext()), info)
    if (request.method === 'GET' && response.status === 200 && url.pathname === `/v1/runs/${info.appId}` && (await built.runtime.runs.parked(info.callId))) {
      response.headers.set(RUN_STATE_HEADER, 'stored')
    }
    return response
  }

  /**
   * Wakes the object at an approval's expiry: resumes the run if the object was restarted,
   * and waits for it (bounded). Once the run has ended and its retention has passed, the
   * object deletes its storage: an ended run leaves nothing behind.
   */
  async alarm(): Promise<void> {
    const built = await this.#build()
    const info = await this.#info()
    const record = info === undefined ? undefined : await built.runtime.runs.records?.get(info.appId)
    if (info === undefined || (record !== undefined && record.status !== 'running')) {
      const until = (record?.settledAt ?? 0) + DEFAULT_RUN_RETENTION_MS
      if (Date.now() < until) return this.#ctx.storage.setAlarm(until)
      if (info !== undefined) {
        await built.index.delete(OWNER_PREFIX + runKeySegment(info.callId))
        await built.index.delete(RUN_OWNER_PREFIX + info.id)
      }
      return this.#ctx.storage.deleteAll()
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([built.resumed, new Promise((resolve) => (timer = setTimeout(resolve, EDGE_CODE_LIMITS.maxWallMs)))])
    clearTimeout(timer)
  }

  async #start(built: Built, id: string, request: Request): Promise<Response> {
    const response = await built.app.fetch(request, this.#env, this.#executionContext())
    if (response.status !== 202) return response
    const body = (await response.clone().json()) as { id: string; callId: string }
    const info: RunInfo = { id, appId: body.id, callId: body.callId }
    await this.#ctx.storage.put({ [INFO_KEY]: JSON.stringify(info) })
    // The Worker reaches this object for the id only once the index knows it (worker.ts): before the 202.
    const starter = await tokenPrincipal(request, this.#env)
    await built.index.put(RUN_OWNER_PREFIX + id, starter?.id ?? '')
    // The Worker finds this object from a decided approval's run call id.
    await built.index.put(OWNER_PREFIX + runKeySegment(info.callId), id)
    if (this.#endedCalls.has(info.callId)) await this.#ended(built.index, info)
    return publicResponse(response, info)
  }

  async #info(): Promise<RunInfo | undefined> {
    const found = (await this.#ctx.storage.get([INFO_KEY])).get(INFO_KEY)
    if (typeof found !== 'string') return undefined
    let info: Partial<RunInfo>
    try {
      info = (await parseStoredJson(found)) as Partial<RunInfo>
    } catch {
      return undefined
    }
    return typeof info.id === 'string' && typeof info.appId === 'string' && typeof info.callId === 'string' ? (info as RunInfo) : undefined
  }

  #executionContext() {
    return { waitUntil: (promise: Promise<unknown>) => this.#ctx.waitUntil(promise), passThroughOnException: () => {}, props: {} }
  }

  #build(): Promise<Built> {
    this.#built ??= this.#create().catch((error: unknown) => {
      this.#built = undefined
      throw error
    })
    return this.#built
  }

  async #create(): Promise<Built> {
    const storage = this.#ctx.storage
    if (this.#env.RUN_INDEX === undefined) throw new Error('ToolyardRun needs the RUN_INDEX binding (wrangler.toml)')
    const store = createDurableObjectStore(storage)
    const index = createIndexStore(this.#env.RUN_INDEX)
    const saved = (await storage.get([WORKSPACE_KEY])).get(WORKSPACE_KEY)
    const workspace = createWorkspace(typeof saved === 'string' ? await readWorkspace(saved) : SEED_FILES)
    const approvals = { store: createRunIndexStore(index, storage), pollIntervalMs: RUN_OBJECT_APPROVAL_POLL_MS, ...approvalTimeoutOption(this.#env) }
    // No resume loop: the object resumes its one run as it is built, below. Its parked record
    // keeps the run span's trace context, so a restarted object resumes it in the same trace.
    const runtime = createToolRuntime({ mode: 'both', ...createEdgeCodeRuntimes(), approvals, store, runs: { resumeEveryMs: 0 }, telemetry: edgeTelemetry() })
    const broker = runtime.approvals!
    for (const tool of demoTools(workspace, storage)) runtime.register(tool)
    askBeforeWriting(runtime)
    this.#watch(runtime, broker, index)
    const app = buildEdgeApp(this.#env, {}, (options) => createToolsApp(runtime, options))
    // The run back in the app's table under its id: its status, events and DELETE work as before the restart, and its record is written as it ends.
    const resumed = await runtime.resumeRuns({ staleMs: 0 })
    const settled = Promise.all(resumed.map((run) => run.result))
    if (resumed.length === 0 && runtime.runs.records !== undefined) await this.#settleLost(runtime.runs.records)
    return { app, runtime, broker, index, store, resumed: settled }
  }

  /**
   * Alarms at each of this run's approvals' expiry (the earliest one pending), and the
   * index's owner entry removed once the run ended.
   */
  #watch(runtime: ToolRuntime, broker: ApprovalBroker, index: DurableStore): void {
    broker.subscribe((event) => {
      if (event.type !== 'requested') return
      const at = event.approval.expiresAt + ALARM_SLACK_MS
      this.#ctx.waitUntil(
        (async () => {
          const current = await this.#ctx.storage.getAlarm()
          if (current === null || current > at || current < Date.now()) await this.#ctx.storage.setAlarm(at)
        })(),
      )
    })
    runtime.on('tools/result', (execution) => {
      if (execution.name !== 'run_code' || execution.parent !== undefined) return
      // Noted at once: a quick run can end before `#start` has written who it is.
      this.#endedCalls.add(execution.callId)
      this.#ctx.waitUntil(
        (async () => {
          const info = await this.#info()
          if (info?.callId === execution.callId) await this.#ended(index, info)
        })(),
      )
    })
  }

  /** The run ended: its owner entry leaves the index; it stays readable for the app's retention, then its object forgets it. */
  async #ended(index: DurableStore, info: RunInfo): Promise<void> {
    await index.delete(OWNER_PREFIX + runKeySegment(info.callId))
    await this.#ctx.storage.setAlarm(Date.now() + DEFAULT_RUN_RETENTION_MS)
  }

  /**
   * A fresh instance whose run is recorded `running` but left no parked state (the object
   * stopped while the run computed or called a tool, before it ever parked): nothing can
   * resume it, so its record says it failed, `INTERRUPTED`, instead of running forever.
   */
  async #settleLost(records: RunRecordStore): Promise<void> {
    const info = await this.#info()
    const read = info === undefined ? undefined : await records.read(info.appId)
    const record = read?.record
    if (record === undefined || record.status !== 'running') return
    // Only over the record judged lost here (compare-and-set).
    if (!(await records.put({ ...record, status: 'failed', settledAt: Date.now(), result: interruptedRunResult('its Durable Object') }, { ifVersion: read!.version })).ok) return
    await this.#ctx.storage.setAlarm(Date.now() + DEFAULT_RUN_RETENTION_MS)
  }
}
