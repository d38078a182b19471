/**
 * Small real tools and a real runtime for the HTTP tests.
 */
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { createToolsApp, createSessionLogHub } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import type { SessionLogHub, ToolsAppOptions } from '../../../src/http/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'
export { until as eventually } from '../../support/poll.js'

export const TOKEN = 'test-token-0123456789abcdef'
export const AUTH = { Authorization: `Bearer ${TOKEN}` } as const
export const JSON_AUTH = { ...AUTH, 'Content-Type': 'application/json' } as const

/** Tokens of three principals: an agent (`run`), a person (`run` + `approve`), an operator (`admin`). */
export const AGENT_TOKEN = 'agent-token-0123456789abcdef'
export const PERSON_TOKEN = 'person-token-0123456789abcdef'
export const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
/** The `tokens` option for them, with readable principal ids. */
export const ROLE_TOKENS = [
  { token: AGENT_TOKEN, roles: ['run'], id: 'agent' },
  { token: PERSON_TOKEN, roles: ['run', 'approve'], id: 'person' },
  { token: ADMIN_TOKEN, roles: ['admin'], id: 'operator' },
] as const satisfies ToolsAppOptions['tokens']

/** JSON request headers carrying `token`. */
export function jsonAuth(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }
}

export const echoTool = defineTool({
  name: 'echo',
  description: 'Echo the text back.',
  parameters: { text: { type: 'string', required: true } },
  output: {
    schema: { type: 'object', properties: { text: { type: 'string', required: true } }, additionalProperties: false },
    render: (_args, value) => [{ type: 'text', text: value.text }],
  },
  execute: (args) => ({ text: args.text }),
  isConcurrencySafe: () => true,
})

export const failTool = defineTool({
  name: 'fail',
  description: 'Always throws.',
  parameters: {},
  output: { schema: { type: 'null' }, render: () => [] },
  execute: () => {
    throw new Error('kaput')
  },
})

/** A tool that runs until its signal aborts; `started` resolves when a body begins. */
export function createWaitTool() {
  let notify: () => void = () => {}
  let started = new Promise<void>((resolve) => (notify = resolve))
  let aborted = 0
  const tool = defineTool({
    name: 'wait',
    description: 'Waits until cancelled.',
    parameters: {},
    output: { schema: { type: 'null' }, render: () => [] },
    execute: (_args, exec) =>
      new Promise<null>((resolve) => {
        // Resolving on abort: the pipeline then turns the late success into ABORTED.
        const stop = (): void => {
          aborted++
          resolve(null)
        }
        if (exec.signal.aborted) stop()
        else exec.signal.addEventListener('abort', stop, { once: true })
        notify()
      }),
  })
  return {
    tool,
    get started() {
      return started
    },
    get aborted() {
      return aborted
    },
    reset() {
      started = new Promise<void>((resolve) => (notify = resolve))
    },
  }
}

/** A runtime with echo / fail / wait globally and `secret` for agent `alice`, plus observers. */
export function createFixture(runtimeOptions: ToolRuntimeOptions = {}, appOptions: Partial<ToolsAppOptions> = {}) {
  const hub: SessionLogHub = createSessionLogHub()
  const runtime: ToolRuntime = createToolRuntime({ sessionLog: hub, ...runtimeOptions })
  const wait = createWaitTool()
  runtime.register(echoTool)
  runtime.register(failTool)
  runtime.register(wait.tool)
  runtime.agent('alice').register(
    defineTool({
      name: 'secret',
      description: "Only alice's layer has it.",
      parameters: {},
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: () => 'for alice',
    }),
  )
  const results: { callId: string; name: string; agent?: string; result: ToolExecutionResult }[] = []
  runtime.on('tools/result', (execution, result) => {
    results.push({ callId: execution.callId, name: execution.name, ...(execution.agent === undefined ? {} : { agent: execution.agent }), result })
  })
  // Counts bodies in flight through the real pipeline (the leak check of the load tests).
  let inFlight = 0
  runtime.on('tools/execute', async (_execution, next) => {
    inFlight++
    try {
      return await next()
    } finally {
      inFlight--
    }
  })
  // `tokens` (principals with roles) replaces the `token` shorthand; everything else keeps TOKEN (one admin).
  const auth = appOptions.tokens === undefined ? { token: TOKEN } : {}
  const app = createToolsApp(runtime, { ...auth, ...appOptions } as ToolsAppOptions)
  return {
    app,
    hub,
    runtime,
    wait,
    results,
    get inFlight() {
      return inFlight
    },
  }
}

export interface ErrorBody {
  error: { code: string; message: string }
}

/** Reads an error body and checks it has exactly the documented shape. */
export async function errorOf(response: Response): Promise<ErrorBody['error']> {
  const body = (await response.json()) as ErrorBody
  if (Object.keys(body).join() !== 'error' || Object.keys(body.error).sort().join() !== 'code,message') {
    throw new Error(`not the documented error shape: ${JSON.stringify(body)}`)
  }
  return body.error
}

/** Parses an SSE body into events. */
export function parseSse(text: string): { event: string; id?: string; data: unknown }[] {
  const events: { event: string; id?: string; data: unknown }[] = []
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue
    const lines = block.split('\n').filter((line) => !line.startsWith(':'))
    if (lines.length === 0) continue
    let event = 'message'
    let id: string | undefined
    const data: string[] = []
    for (const line of lines) {
      const colon = line.indexOf(':')
      const field = line.slice(0, colon)
      const value = line.slice(colon + 1).replace(/^ /, '')
      if (field === 'event') event = value
      else if (field === 'id') id = value
      else if (field === 'data') data.push(value)
    }
    events.push({ event, ...(id === undefined ? {} : { id }), data: JSON.parse(data.join('\n')) as unknown })
  }
  return events
}

/** The default `maxBodyBytes` of the API and the MCP endpoint, as documented (a literal: a changed default must fail the tests). */
export const DOCUMENTED_BODY_LIMIT = 1024 * 1024

/** JSON text of exactly `bytes` UTF-8 bytes: `shape(pad)` with an ASCII `pad` sized to fit. */
export function jsonOfBytes(bytes: number, shape: (pad: string) => unknown): string {
  const overhead = JSON.stringify(shape('')).length
  const text = JSON.stringify(shape('x'.repeat(bytes - overhead)))
  if (new TextEncoder().encode(text).byteLength !== bytes) throw new Error(`could not build a ${bytes}-byte body`)
  return text
}

/** A JSON-RPC `ping` padded to exactly `bytes`. */
export function pingOfBytes(bytes: number): string {
  return jsonOfBytes(bytes, (pad) => ({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad } }))
}

/** An `echo` execution body padded to exactly `bytes`. */
export function echoOfBytes(bytes: number): string {
  return jsonOfBytes(bytes, (pad) => ({ arguments: { text: pad } }))
}

/** One parsed server-sent event. */
export interface SseFrame {
  readonly event: string
  readonly id?: string
  readonly data: unknown
}

/** Reads an event stream frame by frame, so a test can act while the run still goes on. */
export function sseFrames(response: Response) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  const seen: SseFrame[] = []
  const next = async (): Promise<SseFrame | undefined> => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end !== -1) {
        const block = buffer.slice(0, end + 2)
        buffer = buffer.slice(end + 2)
        const [frame] = parseSse(block)
        if (frame === undefined) continue
        seen.push(frame)
        return frame
      }
      const { value, done } = await reader.read()
      if (done) return undefined
      buffer += value
    }
  }
  return {
    seen,
    next,
    /** Reads until an event named `name` (returns it); throws if the stream ends first. */
    async until(name: string): Promise<SseFrame> {
      for (;;) {
        const frame = await next()
        if (frame === undefined) throw new Error(`the stream ended before "${name}" (saw ${seen.map((e) => e.event).join(', ')})`)
        if (frame.event === name) return frame
      }
    },
    /** Reads to the end and returns every frame. */
    async rest(): Promise<SseFrame[]> {
      while ((await next()) !== undefined) {
        // Collected in `seen`.
      }
      return seen
    },
    cancel: () => reader.cancel(),
  }
}

/** The `pay` tool of the asking fixtures: concurrency-safe, so a sibling may run while it waits for a person. */
export function askingPayTool() {
  return defineTool({
    name: 'pay',
    description: 'Pays (asks a person first).',
    parameters: { cents: { type: 'number', required: true } },
    isConcurrencySafe: () => true,
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: (args) => `paid ${args.cents}`,
  })
}

/**
 * A fixture whose `pay` tool asks a person ('money moves') through an approval broker,
 * with the MCP app mounted at `/mcp`: the run-identity and leak suites drive runs that
 * wait for people over every route.
 */
export function askingPayFixture() {
  const broker = createApprovalBroker()
  const fixture = createFixture({ mode: "both", codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: broker })
  fixture.runtime.register(askingPayTool())
  fixture.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  const mcp = createMcpApp(fixture.runtime, { token: TOKEN })
  fixture.app.route('/mcp', mcp)
  return { ...fixture, broker, mcp }
}
