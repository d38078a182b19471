/**
 * Hostile programs through the REAL registry (`createToolRuntime`, mode `code`) and the
 * REAL runtimes (Node worker_threads and QuickJS wasm). Each case is a regression test
 * for a bug found by attacking the finished Code Mode: before the fix the run hung until
 * the wall-clock ceiling, blocked the host thread, or copied an unbounded value to the host.
 *
 * Runs use a generous `maxWallMs` (60 s) so a regression shows as a `timeout` kind,
 * never as a passing test; nothing asserts on elapsed time.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import type { ToolExecutionResult } from '../../../src/types.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

const LIMITS = { computeMs: 20_000, maxWallMs: 60_000 }
const runtimes: Record<'node' | 'quickjs', CodeRuntime> = {
  node: createNodeWorkerRuntime({ ...LIMITS, prespawn: 1 }),
  quickjs: createQuickJsRuntime({ ...LIMITS, wasmModule }),
}
const registries: ToolRuntime[] = []

function setup(kind: keyof typeof runtimes) {
  const sessionLog = createMemorySessionLog()
  const tools = createToolRuntime({ mode: 'code', codeRuntime: runtimes[kind], sessionLog })
  registries.push(tools)
  tools.register(
    defineTool({
      name: 'echo',
      description: 'Echoes v.',
      parameters: { v: { type: 'string' } },
      output: {
        schema: { type: 'object', properties: { got: { type: 'string' } }, additionalProperties: false },
        render: (_a, v) => [{ type: 'text', text: JSON.stringify(v) }],
      },
      isConcurrencySafe: () => true,
      async execute(args) {
        return { got: args.v ?? '' }
      },
    }),
  )
  const run = (code: string) =>
    tools.execute({ callId: 'c1', name: 'run_code', arguments: { code, description: 'hostile' }, signal: new AbortController().signal })
  return { tools, run, sessionLog }
}

function failure(result: ToolExecutionResult): { kind: unknown; message: string } {
  if (!result.isError) throw new Error(`expected a failed run, got ${JSON.stringify(result.value)}`)
  return { kind: (result.error.info as { kind?: unknown } | undefined)?.kind, message: result.error.message }
}

function output(result: ToolExecutionResult): { logs: string[]; result?: unknown } {
  if (result.isError) throw new Error(`run_code failed: ${result.error.message}`)
  return result.value as { logs: string[]; result?: unknown }
}

afterEach(async () => {
  await Promise.all(registries.splice(0).map((t) => t.dispose()))
})
afterAll(async () => {
  await Promise.all(Object.values(runtimes).map((r) => r.dispose()))
})

describe.each(['node', 'quickjs'] as const)('hostile programs on the %s runtime', (kind) => {
  it.each([
    ['a proxy whose traps throw', "throw new Proxy({}, { get() { throw new Error('trap') }, getPrototypeOf() { throw new Error('proto') }, ownKeys() { throw new Error('keys') } })"],
    ['an Error behind a proxy whose traps throw', "throw new Proxy(new Error('e'), { get() { throw new Error('trap') }, getPrototypeOf() { throw new Error('proto') } })"],
    ['a revoked proxy', 'const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy'],
  ])('throwing %s settles at once as an exception (it used to wait for the wall clock)', async (_what, code) => {
    const { run } = setup(kind)
    const { kind: failureKind, message } = failure(await run(code))
    expect(message).toMatch(/code run failed \(exception\): .*Uncaught/)
    expect(failureKind ?? 'exception').toBe('exception')
  })

  it('replacing Promise.prototype.then cannot swallow the outcome', async () => {
    const { run } = setup(kind)
    const result = await run('Promise.prototype.then = function () { return this }\nreturn 42')
    expect(output(result).result).toBe(42)
  })

  it('replacing Promise.prototype.then to forge results changes only what the program itself sees', async () => {
    const { run, sessionLog } = setup(kind)
    const code =
      "const then = Promise.prototype.then\n" +
      "Promise.prototype.then = function (ok, err) { return then.call(this, () => ok && ok({ got: 'forged' }), err) }\n" +
      "const r = await tools.echo({ v: 'real' })\nPromise.prototype.then = then\nreturn r.got"
    const value = output(await run(code)).result
    // The program may lie to itself; the host's record of the sub-call is the real one.
    expect(['real', 'forged']).toContain(value)
    const settled = sessionLog.events.filter((e) => e.type === 'tool/code-dispatch')
    expect(settled).toHaveLength(1)
    expect(JSON.stringify(settled[0])).toContain('real')
    expect(JSON.stringify(settled[0])).not.toContain('forged')
  })

  it('Object.prototype.toJSON pollution cannot break the protocol envelopes', async () => {
    const { run } = setup(kind)
    const result = await run("Object.prototype.toJSON = function () { return 'forged' }\nconsole.log('line')\nreturn 'done'")
    expect(output(result)).toEqual({ logs: ['line'], result: 'done' })
  })

  it('a ten-million-byte error name or message is cut inside the sandbox and the run settles', async () => {
    const { run } = setup(kind)
    const { message } = failure(await run("const e = new Error('m'.repeat(10_000_000)); e.name = 'N'.repeat(10_000_000); throw e"))
    expect(message).toMatch(/code run failed \(exception\): N{100}/)
    expect(message.length).toBeLessThan(40_000)
  })

  it('a three-million-element array comes back as a marked, truncated rendering', async () => {
    const { run } = setup(kind)
    const value = output(await run('return new Array(3_000_000).fill(1)')).result
    expect(typeof value).toBe('string')
    expect(value).toMatch(/^\[1, 1, 1/)
    expect(value).toMatch(/… \[value truncated: larger than maxValueBytes of 32768 bytes\]$/)
  })
})

describe('hostile programs on the node runtime only', () => {
  it('a 64 MB typed array is rendered in the worker, never copied whole to the host', async () => {
    const { run } = setup('node')
    const value = output(await run('const a = new Uint8Array(64 * 1024 * 1024); a[1] = 7; return a')).result
    expect(value).toMatch(/^Uint8Array\(67108864\) \[ 0, 7, 0/)
    expect(value).toMatch(/\[value truncated: larger than maxValueBytes of 32768 bytes\]$/)
  })

  it('a flood of un-awaited calls to a slow tool ends the run instead of growing the host heap', async () => {
    const { tools, run, sessionLog } = setup('node')
    tools.register(
      defineTool({
        name: 'slow',
        description: 'Waits for its signal.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        isConcurrencySafe: () => true,
        execute: (_args, exec) =>
          new Promise<string>((resolve) => exec.signal.addEventListener('abort', () => resolve('aborted'), { once: true })),
      }),
    )
    const { message } = failure(await run('for (let i = 0; i < 200_000; i++) tools.slow()\nawait new Promise(() => {})'))
    expect(message).toMatch(/more than 50000 binding calls in flight at once/)
    // Every started sub-call still logged its start/settle pair inside the run.
    const starts = sessionLog.events.filter((e) => e.type === 'tool/code-dispatch-start').length
    const settles = sessionLog.events.filter((e) => e.type === 'tool/code-dispatch').length
    expect(starts).toBe(settles)
  })
})
