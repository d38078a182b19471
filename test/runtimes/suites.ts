/**
 * What Deno and Bun run against the built package: the CodeRuntime contract (its hostile
 * cases included), parking, the stores' contract (memory and file), the quick start's
 * sub-call load, and an HTTP smoke test of `createToolsApp` behind the runtime's own server.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { createApprovalBroker, createMemoryStore, createToolRuntime, defineTool } from '../../src/index.js'
import type { CodeRuntime } from '../../src/code-runtime/contract.js'
import { createToolsApp } from '../../src/http/index.js'
import { createFileStore } from '../../platforms/node/index.js'
import { describeCodeRuntimeContract, type ContractGaps, type ContractRuntimeOptions } from '../contract/code-runtime-contract.js'
import { describeDurableStoreContract } from '../contract/durable-store-contract.js'
import { describeParkingContract } from '../contract/parking-contract.js'
import { skipWhere } from './vitest-shim.js'

/** A running server: its origin (`http://127.0.0.1:PORT`) and how to stop it. */
export interface Served {
  readonly url: string
  readonly close: () => Promise<void>
}

/** One sandbox entry to run the contracts on. */
export interface SandboxUnderTest {
  /** The package entry it comes from, e.g. `toolyard/node`. */
  readonly entry: string
  readonly make: (options: ContractRuntimeOptions & { readonly memoryMb?: number; readonly prespawn?: number; readonly parkAfterMs?: number }) => CodeRuntime
  readonly gaps?: ContractGaps
  /** Run only these blocks of the CodeRuntime contract; the others are reported skipped with `why`. */
  readonly contractBlocks?: { readonly only: readonly string[]; readonly why: string }
}

/** What a runtime's runner passes in: its name, its sandboxes, and how it serves a fetch handler. */
export interface Host {
  readonly name: string
  readonly sandboxes: readonly SandboxUnderTest[]
  /** Whether `resourceLimits` caps a `node:worker_threads` Worker's heap here (the README's claim, checked). */
  readonly workerHeapCapped: boolean
  /** Serves `fetch` on 127.0.0.1 on a free port, as the README says to on this runtime. */
  readonly serve: (fetch: (request: Request) => Response | Promise<Response>) => Served | Promise<Served>
}

const QUICKJS_STDIO = 'a QuickJS VM has no stdout or stderr: console is its only output'

/** Registers every suite for `host`. */
export function registerSuites(host: Host): void {
  for (const sandbox of host.sandboxes) {
    const label = `sandbox (${sandbox.entry} on ${host.name})`
    describeCodeRuntimeContract(label, (options) => sandbox.make({ ...options, memoryMb: 32 }), { capturesStdio: QUICKJS_STDIO, ...sandbox.gaps })
    const blocks = sandbox.contractBlocks
    if (blocks !== undefined) {
      const prefix = `CodeRuntime contract: ${label} > `
      skipWhere((name) => name.startsWith(prefix) && !blocks.only.some((block) => name.startsWith(`${prefix}${block} > `)), blocks.why)
    }
    describeParkingContract(label, ({ parkAfterMs }) => sandbox.make({ memoryMb: 32, prespawn: 0, parkAfterMs }))
    describeQuickStart(label, sandbox)
  }
  describeDurableStoreContract(`memory (${host.name})`, (options) => createMemoryStore(options))
  const root = mkdtempSync(join(tmpdir(), `toolyard-file-store-${host.name}-`))
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  let n = 0
  describeDurableStoreContract(`file (node:fs on ${host.name})`, (options) => createFileStore(join(root, `store-${n++}`), options))
  describeHttpSmoke(host, host.sandboxes[0]!)
  describeWorkerHeapCap(host)
}

/**
 * The sandbox's second memory bound: `resourceLimits` on its thread's own heap (the
 * program's memory is QuickJS's wasm memory, capped everywhere: the contract's memory
 * bomb). A worker capped at 32 MB allocates about 200 MB of JavaScript arrays.
 */
function describeWorkerHeapCap(host: Host): void {
  describe(`node:worker_threads resourceLimits on ${host.name}`, () => {
    it(`a worker heap past maxOldGenerationSizeMb ${host.workerHeapCapped ? 'ends the worker with ERR_WORKER_OUT_OF_MEMORY' : 'is not stopped (the cap is not enforced)'}`, async () => {
      const source = "const keep = []\nfor (let i = 0; i < 250; i++) keep.push(new Array(1e5).fill({ i }))\nrequire('node:worker_threads').parentPort.postMessage('survived')"
      const worker = new Worker(source, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 32 } })
      const outcome = await new Promise<string>((resolve) => {
        worker.once('message', (message) => resolve(String(message)))
        worker.once('error', (error) => resolve(String((error as { code?: string }).code ?? error.message)))
      })
      await worker.terminate()
      expect(outcome).toBe(host.workerHeapCapped ? 'ERR_WORKER_OUT_OF_MEMORY' : 'survived')
    })
  })
}

/** The quick start: sub-calls in parallel and 1,000 in sequence through the full pipeline. */
function describeQuickStart(label: string, sandbox: SandboxUnderTest): void {
  describe(`quick start: ${label}`, () => {
    it('three sub-calls in parallel, then 1,000 in sequence', async () => {
      const codeRuntime = sandbox.make({ memoryMb: 32 })
      const runtime = createToolRuntime({ mode: 'both', codeRuntime })
      try {
        runtime.register(defineTool({
          name: 'add',
          description: 'Add two numbers.',
          parameters: { a: { type: 'number', required: true }, b: { type: 'number', required: true } },
          output: { schema: { type: 'number' }, render: (_args, sum) => [{ type: 'text', text: String(sum) }] },
          execute: (args) => args.a + args.b,
        }))
        const run = (code: string) => runtime.execute({ callId: 'c', name: 'run_code', arguments: { description: 'd', code }, signal: AbortSignal.timeout(30_000) })
        const parallel = await run('return await Promise.all([1, 2, 3].map((n) => tools.add({ a: n, b: n })))')
        expect(parallel.isError).toBe(false)
        expect(JSON.parse((parallel.content[0] as { text: string }).text)).toEqual([2, 4, 6])
        const sequential = await run('let sum = 0\nfor (let i = 0; i < 1000; i++) sum = await tools.add({ a: sum, b: 1 })\nreturn sum')
        expect(sequential.isError).toBe(false)
        expect((sequential.content[0] as { text: string }).text).toBe('1000')
      } finally {
        await runtime.dispose()
        await codeRuntime.dispose()
      }
    }, 60_000)
  })
}

interface SseFrame {
  readonly event: string
  readonly id: string | undefined
  readonly data: unknown
}

/** Reads server-sent events frame by frame (comments, such as keep-alives, are skipped). */
function frames(response: Response): () => Promise<SseFrame | undefined> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  return async () => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end !== -1) {
        const lines = buffer.slice(0, end).split('\n').filter((line) => !line.startsWith(':'))
        buffer = buffer.slice(end + 2)
        if (lines.length === 0) continue
        const field = (name: string) => lines.find((line) => line.startsWith(`${name}:`))?.slice(name.length + 1).trim()
        return { event: field('event') ?? 'message', id: field('id'), data: JSON.parse(field('data') ?? 'null') as unknown }
      }
      const { value, done } = await reader.read()
      if (done) return undefined
      buffer += value
    }
  }
}

const TOKEN = 'runtime-smoke-token-0123456789'
const AUTH = { Authorization: `Bearer ${TOKEN}` }

/** The HTTP app behind the runtime's server: a background run asks, a person allows over HTTP, the run's stream reads to `end`. */
function describeHttpSmoke(host: Host, sandbox: SandboxUnderTest): void {
  describe(`HTTP app on ${host.name}'s server`, () => {
    it('POST /v1/runs → approval over GET/POST /v1/approvals → /v1/runs/:id/events to end; POST /v1/run streams too', async () => {
      const codeRuntime = sandbox.make({ memoryMb: 32 })
      const broker = createApprovalBroker()
      const runtime = createToolRuntime({ mode: 'both', codeRuntime, approvals: broker })
      const paid: number[] = []
      runtime.register(defineTool({
        name: 'pay',
        description: 'Pays (asks a person first).',
        parameters: { cents: { type: 'number', required: true } },
        output: { schema: { type: 'string' }, render: (_args, text) => [{ type: 'text', text }] },
        execute: (args) => {
          paid.push(args.cents)
          return `paid ${args.cents}`
        },
      }))
      runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
      const shutdown = new AbortController()
      const app = createToolsApp(runtime, { token: TOKEN, signal: shutdown.signal })
      const server = await host.serve(app.fetch)
      try {
        const health = await fetch(`${server.url}/v1/health`)
        expect(health.status).toBe(200)
        await health.body?.cancel()
        const unauthorized = await fetch(`${server.url}/v1/tools`)
        expect(unauthorized.status).toBe(401)
        await unauthorized.body?.cancel()

        const created = await fetch(`${server.url}/v1/runs`, {
          method: 'POST',
          headers: { ...AUTH, 'Content-Type': 'application/json' },
          body: JSON.stringify({ description: 'pay', code: 'return await tools.pay({ cents: 7 })' }),
        })
        expect(created.status).toBe(202)
        const { id } = (await created.json()) as { id: string }
        const events = await fetch(`${server.url}/v1/runs/${id}/events`, { headers: { ...AUTH, Accept: 'text/event-stream' } })
        expect(events.status).toBe(200)
        expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/)
        const next = frames(events)
        const seen: SseFrame[] = []
        let frame: SseFrame | undefined
        while ((frame = await next()) !== undefined && frame.event !== 'approval') seen.push(frame)
        expect(frame?.event).toBe('approval')
        const approval = frame!.data as { id: string; name: string }
        expect(approval.name).toBe('pay')
        expect(paid).toEqual([])

        const listed = (await (await fetch(`${server.url}/v1/approvals`, { headers: AUTH })).json()) as { approvals: Array<{ id: string }> }
        expect(listed.approvals.map((a) => a.id)).toContain(approval.id)
        const waiting = (await (await fetch(`${server.url}/v1/runs/${id}`, { headers: AUTH })).json()) as { status: string }
        expect(waiting.status).toBe('waiting')
        const decided = await fetch(`${server.url}/v1/approvals/${approval.id}`, {
          method: 'POST',
          headers: { ...AUTH, 'Content-Type': 'application/json' },
          body: JSON.stringify({ decision: 'allow' }),
        })
        expect(decided.status).toBe(200)
        await decided.body?.cancel()

        seen.push(frame!)
        while ((frame = await next()) !== undefined) seen.push(frame)
        const names = seen.map((f) => f.event)
        expect(names[0]).toBe('start')
        expect(names).toContain('approval-settled')
        expect(names.slice(-2)).toEqual(['result', 'end'])
        expect(seen.at(-1)!.data).toEqual({ id, status: 'done' })
        expect(paid).toEqual([7])
        const done = (await (await fetch(`${server.url}/v1/runs/${id}`, { headers: AUTH })).json()) as { status: string; result: { isError: boolean } }
        expect(done).toMatchObject({ status: 'done', result: { isError: false } })

        const streamed = await fetch(`${server.url}/v1/run`, {
          method: 'POST',
          headers: { ...AUTH, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
          body: JSON.stringify({ description: 'sum', code: 'return 6 * 7' }),
        })
        const read = frames(streamed)
        const streamedNames: string[] = []
        let last: SseFrame | undefined
        while ((frame = await read()) !== undefined) {
          streamedNames.push(frame.event)
          last = frame
        }
        expect(streamedNames).toEqual(['start', 'result'])
        expect(last!.data).toMatchObject({ isError: false, value: { result: 42 } })
      } finally {
        shutdown.abort()
        await server.close()
        await runtime.dispose()
        await codeRuntime.dispose()
      }
    }, 60_000)
  })
}
