/**
 * `createPreflightWorker()` (toolyard/node): the same analysis as the inline engine, in a
 * `worker_threads` thread: the host's event loop keeps turning while the compiler loads
 * and checks, a check over its time budget stops the thread and answers a note, and a
 * registry using it appends the mistakes under `'warn'`.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createPreflightWorker, loadTypeScript } from '../../../platforms/node/index.js'
import { createInlinePreflightEngine } from '../../../src/preflight/inline-engine.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'

const DECLARATIONS = 'declare const tools: { read_file(args: { path: string }): Promise<string> };'
const PROGRAM = 'const a = 1\nawait tools.read_fil({ path: "x" })\nawait tools.read_file({ path: 2 })'
const SLOW_TO_CHECK = [
  "type D = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9'",
  'type N4 = `${D}${D}${D}${D}`',
  'type A = { [K in N4]: { k: K; v: [K, K] } }',
  'type B = { [K in N4]: { k: K; v: [K, string] } }',
  'const a = {} as A',
  'const b: B = a',
  'const c: { [K in N4]: { k: string } } = b',
  'return c',
].join('\n')
// A fresh thread's first check loads the compiler: seconds, and more than the default 10 s budget on a loaded CI machine.
const worker = createPreflightWorker({ timeoutMs: 120_000 })
afterAll(() => worker.dispose())

describe('createPreflightWorker', () => {
  it('answers what the inline engine answers, while the host event loop keeps turning', async () => {
    let last = performance.now()
    let maxGap = 0
    const ticker = setInterval(() => {
      const now = performance.now()
      maxGap = Math.max(maxGap, now - last)
      last = now
    }, 5)
    const started = performance.now()
    const threaded = await worker.analyze({ program: PROGRAM, language: 'typescript', declarations: DECLARATIONS })
    const took = performance.now() - started
    clearInterval(ticker)
    const inline = await createInlinePreflightEngine({ load: loadTypeScript }).analyze({ program: PROGRAM, language: 'typescript', declarations: DECLARATIONS })
    expect(threaded).toEqual(inline)
    expect(threaded.diagnostics?.map((d) => d.code)).toEqual([2551, 2322])
    expect(worker.where).toBe('thread')
    // The first check loads the compiler (seconds); the host was never held for a large share of it.
    expect(maxGap, `max event-loop gap ${maxGap} ms during a ${took} ms check`).toBeLessThan(Math.max(took / 2, 250))
  }, 120_000)

  it('keeps answering after the declarations change (the SDK text crosses again)', async () => {
    const next = await worker.analyze({ program: 'await tools.list()', language: 'typescript', declarations: 'declare const tools: { list(): Promise<string[]> };' })
    expect(next.diagnostics).toEqual([])
    const again = await worker.analyze({ program: 'await tools.list(1)', language: 'typescript', declarations: 'declare const tools: { list(): Promise<string[]> };' })
    expect(again.diagnostics?.map((d) => d.code)).toEqual([2554])
  })

  it('stops a check over its time budget and answers a note, never an error', async () => {
    // The compiler's load is not counted (thread-load.test.ts): the check itself must be slow. Ten
    // thousand mapped members compared twice take seconds to check, far past 500 ms.
    const hurried = createPreflightWorker({ timeoutMs: 500 })
    try {
      const result = await hurried.analyze({ program: SLOW_TO_CHECK, language: 'typescript', declarations: DECLARATIONS })
      expect(result.notes).toEqual([expect.objectContaining({ code: 'CHECK_TIMEOUT', severity: 'info' })])
    } finally {
      await hurried.dispose()
    }
  })

  it('refuses checks beyond its queue at once', async () => {
    const small = createPreflightWorker({ maxQueued: 1, timeoutMs: 120_000 })
    try {
      const first = small.analyze({ program: '1', language: 'typescript', declarations: DECLARATIONS })
      const second = await small.analyze({ program: '2', language: 'typescript', declarations: DECLARATIONS })
      expect(second.notes).toEqual([expect.objectContaining({ code: 'CHECK_BUSY' })])
      expect((await first).diagnostics).toEqual([])
    } finally {
      await small.dispose()
    }
  })

  it('serves runtime.preflight of a registry that uses it', async () => {
    const runtime = createToolRuntime({ preflightEngine: worker })
    runtime.register(
      defineTool({
        name: 'read_file',
        description: 'Reads a file.',
        parameters: { path: { type: 'string', required: true } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (args) => args.path,
      }),
    )
    const report = await runtime.preflight({ code: PROGRAM })
    expect(report.diagnostics.map((d) => `${d.line}:${d.code}:${d.severity}`)).toEqual(['2:TS2551:error', '3:TS2322:error'])
    expect(report.plan.calls.map((c) => c.name)).toEqual(['read_fil', 'read_file'])
    await runtime.dispose()
  })
})
