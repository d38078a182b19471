/**
 * One runtime, two languages (`createToolRuntime({ codeRuntime, codeRuntimes })`): the model is
 * shown the first; a `run_code` call, `POST /v1/run` or a resumed run that names the other
 * runs there, through the same pipeline and store. Real sandboxes (QuickJS and MicroPython
 * threads), a real HTTP app, a real store.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ApprovalHandler, ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'
import { createFixture, JSON_AUTH } from '../http/fixtures.js'

const typescript = createSandboxRuntime({ prespawn: 0, parkAfterMs: 30 })
const python = createSandboxRuntime({ language: 'python', prespawn: 0 })
const disposers: (() => Promise<void>)[] = [() => typescript.dispose(), () => python.dispose()]
afterAll(async () => {
  for (const dispose of disposers.reverse()) await dispose()
})

const add = defineTool({
  name: 'add',
  description: 'Add two numbers.',
  parameters: { a: { type: 'number', required: true }, b: { type: 'number', required: true } },
  output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
  execute: (args) => args.a + args.b,
})

function valueOf(result: ToolExecutionResult): unknown {
  expect(result.isError, result.isError ? result.error.message : '').toBe(false)
  return (result as { value: { result?: unknown } }).value.result
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return error instanceof ToolError ? `${error.code}: ${error.message}` : String(error)
  }
  return undefined
}

const PY = 'r = await tools.add({"a": 2, "b": 3})\nreturn r * 10 if r else 0'
const TS = 'const r = await tools.add({ a: 2, b: 3 })\nreturn r * 10'

describe('createToolRuntime({ codeRuntime, codeRuntimes }): programs in more than one language', () => {
  it('refuses codeRuntimes that are not an array, have no codeRuntime beside them, or run a language twice', () => {
    expect(codeOf(() => createToolRuntime({ mode: 'code', codeRuntime: typescript, codeRuntimes: python as never }))).toBe(
      'INVALID_OPTIONS: options.codeRuntimes must be an array of CodeRuntime objects (got object)',
    )
    expect(codeOf(() => createToolRuntime({ mode: 'code', codeRuntimes: [python] }))).toContain('options.codeRuntimes needs options.codeRuntime')
    expect(codeOf(() => createToolRuntime({ mode: 'code', codeRuntime: typescript, codeRuntimes: [typescript] }))).toContain(
      'options.codeRuntimes[0] runs "typescript", a language another code runtime already runs',
    )
    expect(codeOf(() => createToolRuntime({ mode: 'code', codeRuntime: typescript, codeRuntimes: [{ language: 'python' } as never] }))).toBe(
      'INVALID_OPTIONS: options.codeRuntimes[0].isolation must be a string',
    )
  })

  it('shows the model the first language, offers `language` in run_code, and runs each program in its own language', async () => {
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: typescript, codeRuntimes: [python] })
    disposers.push(() => runtime.dispose())
    runtime.register(add)
    const runCode = runtime.assemble().tools.find((t) => t.name === 'run_code')!
    expect(runCode.parameters.properties?.language).toMatchObject({ enum: ['typescript', 'python'] })
    expect(runtime.assemble().sections.map((s) => s.text).join('\n')).toContain('declare const tools')
    const run = (args: Record<string, unknown>) => runtime.execute({ callId: crypto.randomUUID(), name: 'run_code', arguments: { description: 'd', ...args }, signal: AbortSignal.timeout(30_000) })
    expect(valueOf(await run({ code: TS }))).toBe(50)
    expect(valueOf(await run({ code: TS, language: 'typescript' }))).toBe(50)
    expect(valueOf(await run({ code: PY, language: 'python' }))).toBe(50)
    // Each runtime refuses the other's program: nothing is guessed.
    const wrong = await run({ code: PY })
    expect(wrong.isError && wrong.error.message).toContain('SyntaxError')
    const unknown = await run({ code: TS, language: 'ruby' })
    expect(unknown.isError && unknown.error.info).toMatchObject({ code: 'INVALID_ARGS' })
    expect(unknown.isError && unknown.error.message).toContain('/language: must be one of "typescript", "python"')
  })

  it('a one-language runtime offers no `language` and refuses another one by name', async () => {
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: typescript })
    disposers.push(() => runtime.dispose())
    runtime.register(add)
    expect(runtime.assemble().tools.find((t) => t.name === 'run_code')!.parameters.properties?.language).toBeUndefined()
    const refused = await runtime.execute({ callId: 'one', name: 'run_code', arguments: { code: PY, description: 'd', language: 'python' }, signal: AbortSignal.timeout(30_000) })
    expect(refused.isError && refused.error.message).toContain('/language: must be one of "typescript"')
    expect(valueOf(await runtime.execute({ callId: 'same', name: 'run_code', arguments: { code: TS, description: 'd', language: 'typescript' }, signal: AbortSignal.timeout(30_000) }))).toBe(50)
  })

  it('POST /v1/run runs either language and names both when it refuses a third', async () => {
    const { app, runtime } = createFixture({ mode: 'both', codeRuntime: typescript, codeRuntimes: [python] })
    disposers.push(() => runtime.dispose())
    const post = (body: unknown) => app.request('/v1/run', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) })
    for (const [language, code] of [['python', 'r = await tools.echo({"text": "hi"})\nreturn r["text"]'], ['typescript', 'return (await tools.echo({ text: "hi" })).text'], [undefined, 'return "hi"']] as const) {
      const response = await post({ code, description: 'd', ...(language === undefined ? {} : { language }) })
      expect(response.status).toBe(200)
      expect(valueOf((await response.json()) as ToolExecutionResult)).toBe('hi')
    }
    for (const language of ['ruby', 42]) {
      const refused = await post({ code: 'return 1', description: 'd', language })
      expect(refused.status).toBe(400)
      expect(await refused.text()).toContain('this server runs programs in typescript and python')
    }
  })

  it('a run in the second language parks with its language, and another process resumes it in that language', async () => {
    const store = createMemoryStore()
    // Python is the model's language here; TypeScript (which parks) is the second.
    const processOn = (approval: ApprovalHandler, s: DurableStore) => {
      const runtime = createToolRuntime({ mode: 'code', codeRuntime: python, codeRuntimes: [typescript], store: s, approval })
      disposers.push(() => runtime.dispose())
      runtime.register(add)
      runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'add' ? { kind: 'ask', reason: 'a person adds' } : decision))
      return runtime
    }
    const asked: ((allow: boolean) => void)[] = []
    const a = processOn(() => new Promise<boolean>(() => {}), store)
    void a.execute({ callId: 'lang-run', name: 'run_code', arguments: { code: TS, description: 'add', language: 'typescript' }, signal: new AbortController().signal })
    await until(async () => (await store.list('runs/')).entries.length === 1)
    const record = JSON.parse((await store.get('runs/lang-run'))!.value) as { park: { language?: string } }
    expect(record.park.language).toBe('typescript')
    const b = processOn((request) => new Promise<boolean>((resolve) => asked.push(resolve)).then((allow) => (request.execution.callId === 'lang-run:code:1' ? allow : false)), store)
    const resumed = await b.resumeRuns({ staleMs: 0 })
    expect(resumed.map((r) => r.callId)).toEqual(['lang-run'])
    await until(() => asked.length === 1)
    asked[0]!(true)
    // Resumed as TypeScript (as Python, `const r = …` would be a SyntaxError).
    expect(valueOf((await resumed[0]!.result) as ToolExecutionResult)).toBe(50)
  })
})
