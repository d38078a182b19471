/**
 * A durable Python run through the store (docs/durability.md): `run_code` with `language:
 * 'python'` parks while a person decides, its record keeps the journal and the language, and
 * another process resumes it by replay in a fresh interpreter. Real MicroPython threads, a real
 * (memory) store, the real pipeline.
 */
import { afterAll, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ApprovalHandler, ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'

const disposers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposers.reverse()) await dispose()
})

let added = 0
const add = defineTool({
  name: 'add',
  description: 'Add two numbers.',
  parameters: { a: { type: 'number', required: true }, b: { type: 'number', required: true } },
  output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
  execute: (args) => {
    added++
    return args.a + args.b
  },
})

function valueOf(result: ToolExecutionResult): unknown {
  expect(result.isError, result.isError ? result.error.message : '').toBe(false)
  return (result as { value: { result?: unknown } }).value.result
}

it('a Python run_code parks into the store while a person decides, and another process resumes it by replay', async () => {
  const store = createMemoryStore()
  const processOn = (approval: ApprovalHandler, s: DurableStore) => {
    const python = createSandboxRuntime({ language: 'python', prespawn: 0, parkAfterMs: 30 })
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: python, store: s, approval })
    disposers.push(() => python.dispose(), () => runtime.dispose())
    runtime.register(add)
    runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'add' && (execution.arguments as { a?: unknown } | null)?.a === 20 ? { kind: 'ask', reason: 'a person adds' } : decision))
    return runtime
  }
  const code = 'first = await tools.add({"a": 1, "b": 2})\nsecond = await tools.add({"a": 20, "b": first})\nreturn [first, second]'
  const a = processOn(() => new Promise<boolean>(() => {}), store)
  void a.execute({ callId: 'py-run', name: 'run_code', arguments: { code, description: 'add twice', language: 'python' }, signal: new AbortController().signal })
  await until(async () => {
    const record = await store.get('runs/py-run')
    return record !== undefined && (JSON.parse(record.value) as { park?: unknown }).park !== undefined
  })
  const record = JSON.parse((await store.get('runs/py-run'))!.value) as { park: { language?: string } }
  expect(record.park.language).toBe('python')
  expect(added).toBe(1)
  const asked: ((allow: boolean) => void)[] = []
  const b = processOn(() => new Promise<boolean>((resolve) => asked.push(resolve)), store)
  const resumed = await b.resumeRuns({ staleMs: 0 })
  expect(resumed.map((r) => r.callId)).toEqual(['py-run'])
  await until(() => asked.length === 1)
  asked[0]!(true)
  expect(valueOf((await resumed[0]!.result) as ToolExecutionResult)).toEqual([3, 23])
  // The first call ran once, in process A: the replay answered it from the journal.
  expect(added).toBe(2)
})
