/**
 * Preflight in Chromium, off the page's main thread: the browser `createPreflightWorker`
 * loads the compiler in a module Web Worker (lib files fetched from the typescript
 * package's `lib/` folder) and answers what the Node engines answer.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createPreflightWorker } from '../../platforms/browser/preflight-worker.js'
import { createToolRuntime } from '../../src/registry/index.js'
import { defineTool } from '../../src/schema/define-tool.js'

// The first check loads the compiler (seconds); the budget is far above it on a loaded machine.
const engine = createPreflightWorker({ libBaseUrl: '/node_modules/typescript/lib/', timeoutMs: 90_000 })
afterAll(() => engine.dispose())

describe('preflight in a browser Web Worker', () => {
  it('loads the compiler in the worker (the first check)', async () => {
    const first = await engine.analyze({ program: 'await tools.x()', language: 'typescript', declarations: 'declare const tools: { y(): Promise<void> };' })
    expect(first.notes, JSON.stringify(first.notes)).toEqual([])
    expect(first.diagnostics?.map((d) => d.code)).toEqual([2339])
  }, 120_000)

  it('type-checks a program against the tools and gives its plan', async () => {
    const runtime = createToolRuntime({ preflightEngine: engine })
    runtime.register(
      defineTool({
        name: 'count_items',
        description: 'Counts items.',
        parameters: { list: { type: 'string', required: true } },
        output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
        execute: () => 3,
      }),
    )
    const report = await runtime.preflight({ code: 'const n = await tools.count_items({ list: 1 })\nawait tools.count_itmes({ list: "x" })\nconst s: string = 5 as unknown as string' })
    expect(report.diagnostics.map((d) => `${d.line}:${d.code}:${d.severity}`), JSON.stringify(report.diagnostics)).toEqual(['1:TS2322:error', '2:TS2551:error'])
    expect(report.diagnostics[1]!.message).toBe('tools.count_itmes is not a tool this program can call; did you mean tools.count_items?')
    expect(report.plan).toEqual({ calls: [{ name: 'count_items', line: 1, column: 17 }, { name: 'count_itmes', line: 2, column: 7 }], dynamic: false })
    await runtime.dispose()
  }, 120_000)
})
