import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { RUN_CODE_TOOL_NAME, WARN_WAIT_ON_FAILURE_MS, createRunCodeTool } from '../../../src/code-mode/run-code.js'
import { ToolArgsError, ToolError } from '../../../src/errors.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { createInProcessRuntime } from './support/in-process-runtime.js'
import { createTestHost } from './support/test-host.js'
import type { CodeModeRegistry } from '../../../src/code-mode/registry-seam.js'
import type { ToolResultRecord } from '../../../src/types.js'

// Made in each test, not once per file: a mutant in the definition's members then reaches the test
// (a definition built at import time would keep the members of the unmutated module).
let tool: ReturnType<typeof createRunCodeTool>
let bareRunCode: ReturnType<typeof createRunCodeTool>
beforeEach(() => {
  tool = createRunCodeTool(createTestHost({}, { runtime: createInProcessRuntime() }))
  bareRunCode = createRunCodeTool({} as CodeModeRegistry)
})

describe('run_code definition', () => {
  it('is named run_code with the { code, description } closed schema, exactly as documented', () => {
    expect(RUN_CODE_TOOL_NAME).toBe('run_code')
    expect(tool.name).toBe('run_code')
    expect(tool.description).toBe('Run a program that calls the available tools through the `tools` SDK. Only what the program prints or returns comes back.')
    expect(tool.parameters).toEqual({
      type: 'object',
      properties: {
        code: {
          type: 'string',
          description: 'The program: the body of an async function. Call tools as `await tools.name(args)`; emit results with `return` and/or `console.log(...)`.',
        },
        description: { type: 'string', description: 'A short summary of what the program does.' },
      },
      required: ['code', 'description'],
      additionalProperties: false,
    })
    expect(tool.output.schema).toEqual({
      type: 'object',
      properties: { logs: { type: 'array', items: { type: 'string' } }, result: {}, preflight: { type: 'string' } },
      required: ['logs'],
      additionalProperties: false,
    })
    // Not concurrency-safe: a run is exclusive.
    expect(tool.isConcurrencySafe).toBeUndefined()
  })

  it('validates arguments strictly with ToolArgsError (INVALID_ARGS)', () => {
    const args = { code: 'return 1', description: 'one' }
    expect(tool.validateArgs!(args)).toBe(args)
    expect(tool.softValidateArgs!(args)).toBe(args)
    const cases: Array<[JsonValue, string]> = [
      [null, '(root)'],
      [[], '(root)'],
      ['return 1', '(root)'],
      [{ description: 'd' }, '/code: missing required property "code"'],
      [{ code: 'x' }, '/description: missing required property "description"'],
      [{ code: 1, description: 'd' }, '/code: expected string, got integer'],
      [{ code: 'x', description: null }, '/description: expected string, got null'],
      [{ code: 'x', description: 'd', extra: 1 }, '/extra: unexpected property "extra" (additionalProperties is false)'],
      [{ code: 'x', description: 'd', 'a/b': 1 }, '/a~1b: unexpected property "a/b" (additionalProperties is false)'],
    ]
    for (const [input, fragment] of cases) {
      let thrown: unknown
      try {
        tool.validateArgs!(input)
      } catch (error) {
        thrown = error
      }
      expect(thrown, JSON.stringify(input)).toBeInstanceOf(ToolArgsError)
      expect((thrown as ToolArgsError).code).toBe('INVALID_ARGS')
      expect((thrown as ToolArgsError).message).toContain(fragment)
    }
  })

  it('soft-validates without throwing', () => {
    expect(tool.softValidateArgs!({ code: 'x', description: 'd' })).toEqual({ code: 'x', description: 'd' })
    expect(tool.softValidateArgs!({ code: 1 })).toBeUndefined()
    expect(tool.softValidateArgs!(null)).toBeUndefined()
  })

  it('renders the canonical value as one text block per the seed rules', () => {
    const args = { code: '', description: '' }
    expect(tool.output.render(args, { logs: ['a', 'b'], result: 'raw' })).toEqual([{ type: 'text', text: 'a\nb\nraw' }])
    expect(tool.output.render(args, { logs: [] })).toEqual([{ type: 'text', text: '(run_code completed with no output)' }])
    expect(tool.output.render(args, { logs: [], result: { a: 1 } })).toEqual([{ type: 'text', text: '{\n  "a": 1\n}' }])
  })

  it('derives presentation metadata from the value alone', () => {
    const args = { code: '', description: '' }
    expect(tool.output.presentationMeta!(args, { logs: ['a', 'b'], result: null })).toEqual({ logLines: 2, hasResult: true })
    expect(tool.output.presentationMeta!(args, { logs: [] })).toEqual({ logLines: 0, hasResult: false })
  })

  it('presents the call as a generic execute card with the program as raw input', () => {
    const args = { code: 'return 1', description: 'Return one' }
    expect(tool.presentCall!(args, args)).toEqual({
      card: 'generic',
      kind: 'execute',
      title: 'Run code',
      rawInput: 'return 1',
      content: 'Return one',
    })
    // Replay of an older, invalid call falls back to the raw arguments.
    expect(tool.presentCall!(undefined, { code: 5 })).toEqual({
      card: 'generic',
      kind: 'execute',
      title: 'Run code',
      rawInput: { code: 5 },
    })
  })

  it('presents the result as a generic card with the captured output', () => {
    const args = { code: 'return 1', description: 'Return one' }
    expect(
      tool.presentResult!(args, { isError: false, content: [{ type: 'text', text: 'hello\n1' }] }, args),
    ).toEqual({ card: 'generic', title: 'Return one', content: 'hello\n1' })
    expect(
      tool.presentResult!(
        undefined,
        { isError: true, content: [{ type: 'text', text: 'Error: code run failed (timeout): x' }] },
        {},
      ),
    ).toEqual({ card: 'generic', title: 'Run code', content: 'Error: code run failed (timeout): x' })
  })
})

/*
 * The `run_code` definition's own members as units: its schemas, its argument checks
 * with exact violations, its presenters and its output projections.
 */

function violations(args: unknown) {
  try {
    bareRunCode.validateArgs!(args as never)
  } catch (error) {
    expect(error).toBeInstanceOf(ToolArgsError)
    return (error as ToolArgsError).violations
  }
  return undefined
}

describe('run_code: arguments', () => {
  // The shared schema validator's words, as every other tool's arguments get them.
  it('reports every violation, each at its pointer', () => {
    expect(violations({})).toEqual([
      { path: '/code', message: 'missing required property "code"' },
      { path: '/description', message: 'missing required property "description"' },
    ])
    expect(violations({ code: 1, description: null })).toEqual([
      { path: '/code', message: 'expected string, got integer' },
      { path: '/description', message: 'expected string, got null' },
    ])
    expect(violations({ code: '', description: '', 'a/b': 1, 'c~d': 2 })).toEqual([
      { path: '/a~1b', message: 'unexpected property "a/b" (additionalProperties is false)' },
      { path: '/c~0d', message: 'unexpected property "c~d" (additionalProperties is false)' },
    ])
    expect([null, [], 'code', 3].map((args) => violations(args)?.[0]?.message)).toEqual([
      'expected object, got null',
      'expected object, got array',
      'expected object, got string',
      'expected object, got integer',
    ])
  })

  it('soft validation answers undefined instead of throwing', () => {
    expect(bareRunCode.softValidateArgs!({ code: 'x' } as never)).toBeUndefined()
    expect(bareRunCode.softValidateArgs!(null as never)).toBeUndefined()
  })
})

describe('run_code: presentation', () => {
  it('presents the call with the program, and the description when there is one', () => {
    expect(bareRunCode.presentCall!({ code: 'return 1', description: 'sum' }, {})).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: 'return 1', content: 'sum' })
    const noDescription = bareRunCode.presentCall!({ code: 'return 1', description: '' }, {})
    expect(noDescription).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: 'return 1' })
    expect(Object.hasOwn(noDescription!, 'content')).toBe(false)
    const raw = { code: 5 }
    expect(bareRunCode.presentCall!(undefined, raw)).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: raw })
  })

  it('presents the result under the description, its content as text', () => {
    const record = { content: [{ type: 'text', text: 'line 1' }, { type: 'image', data: 'x', mimeType: 'image/png' }, { type: 'text', text: 'line 2' }] } as unknown as ToolResultRecord
    expect(bareRunCode.presentResult!({ code: 'x', description: 'sum' }, record, {})).toEqual({ card: 'generic', title: 'sum', content: 'line 1\n[image]\nline 2' })
    expect(bareRunCode.presentResult!({ code: 'x', description: '' }, record, {})?.title).toBe('Run code')
    expect(bareRunCode.presentResult!(undefined, record, {})?.title).toBe('Run code')
  })

  it('counts log lines and says whether there is a result', () => {
    const meta = bareRunCode.output.presentationMeta!
    expect(meta({} as never, { logs: ['a', 'b'], result: 0 } as never)).toEqual({ logLines: 2, hasResult: true })
    expect(meta({} as never, { logs: [] } as never)).toEqual({ logLines: 0, hasResult: false })
    expect(meta({} as never, { logs: 'x' } as never)).toEqual({ logLines: 0, hasResult: false })
    expect(meta({} as never, { logs: [], result: null } as never)).toEqual({ logLines: 0, hasResult: true })
  })

  it('renders the output as one text block', () => {
    const blocks = bareRunCode.output.render({} as never, { logs: ['hello'], result: { n: 1 } } as never)
    expect(blocks).toHaveLength(1)
    expect(blocks[0]!.type).toBe('text')
    expect((blocks[0] as { text: string }).text).toContain('hello')
  })
})

/*
 * `run_code` under a preflight seam (a recording fake of what the registry passes):
 * which modes check, what `'block'` refuses with, what `'warn'` appends to a run and to
 * a failed run (after waiting at most WARN_WAIT_ON_FAILURE_MS for the check), and plan
 * approval around the run. The real engine's verdicts are test/unit/preflight's.
 */
describe('run_code: preflight and plan approval', () => {
  const error = (line: number, message: string) => ({ line, column: 2, code: 'TS2339', message, severity: 'error' as const })
  const info = { line: 1, column: 1, code: 'CHECK_UNAVAILABLE', message: 'no engine', severity: 'info' as const }
  const report = (...diagnostics: object[]) => ({ diagnostics, plan: { calls: [] }, ms: 1 }) as never
  const WARN = 'Preflight (type-check against the tools SDK, before the run) found'
  const BLOCK = "preflight: 'block' refused the program; nothing ran. The type-check against the tools SDK found"

  type Outcome = { logs?: { source: 'console'; level: 'log'; text: string }[]; value?: unknown; error?: { kind: string; message: string } }
  /** A code runtime that records its runs and answers `outcome`. */
  function runtime(language: string, outcome: Outcome = { value: 'ran' }) {
    const runs: string[] = []
    return {
      runs,
      runtime: {
        language,
        isolation: 'scripted',
        capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
        run: async (request: { program: string }) => (runs.push(request.program), { logs: [], ...outcome }),
        dispose: async () => {},
      } as never,
    }
  }

  /** A preflight seam that records what it is asked. */
  function seam(mode: string, check: () => Promise<unknown>, options: { warnChecks?: boolean; approvePlan?: (input: unknown) => Promise<() => void> } = {}) {
    const asked: unknown[] = []
    const preflight = {
      mode: (agent: unknown) => (asked.push(['mode', agent]), mode),
      warnChecks: () => options.warnChecks ?? true,
      check: (code: string, agent: unknown, language: string, signal: AbortSignal) => (asked.push(['check', code, agent, language, signal instanceof AbortSignal]), check()),
      ...(options.approvePlan === undefined ? {} : { approvePlan: options.approvePlan }),
    }
    return { preflight: preflight as never, asked }
  }

  const exec = () => ({ callId: 'c1', name: 'run_code', agent: 'ann', signal: new AbortController().signal, token: {}, deferContext: () => {} }) as never
  const execute = (registryRuntime: unknown, preflight: unknown) =>
    createRunCodeTool(createTestHost({}, { runtime: registryRuntime as never }), preflight as never).execute({ code: 'the program', description: 'd' }, exec()) as Promise<unknown>

  async function rejection(promise: Promise<unknown>): Promise<{ name: string; code: string; message: string }> {
    try {
      await promise
    } catch (caught) {
      const e = caught as { name: string; code: string; message: string }
      return { name: e.name, code: e.code, message: e.message }
    }
    throw new Error('did not reject')
  }

  afterEach(() => {
    vi.useRealTimers()
  })

  it("checks nothing when off, for Python, or under 'warn' without an integrator's engine", async () => {
    for (const [mode, language, warnChecks] of [['off', 'typescript', true], ['warn', 'python', true], ['block', 'python', true], ['warn', 'typescript', false]] as const) {
      const { runtime: r, runs } = runtime(language)
      const { preflight, asked } = seam(mode, async () => report(error(1, 'never read')), { warnChecks })
      expect(await execute(r, preflight)).toEqual({ logs: [], result: 'ran' })
      expect(runs).toEqual(['the program'])
      expect(asked).toEqual([['mode', 'ann']])
    }
  })

  it("'block' refuses a program with errors (nothing runs), with the count and each line; one error says 'problem'", async () => {
    const { runtime: r, runs } = runtime('typescript')
    const { preflight, asked } = seam('block', async () => report(error(3, 'tools.x is not a tool\nsecond line'), info))
    expect(await rejection(execute(r, preflight))).toEqual({
      name: 'ToolError',
      code: 'PREFLIGHT_FAILED',
      message: `${BLOCK} 1 problem:\n  line 3, column 2: TS2339 tools.x is not a tool\n    second line`,
    })
    expect(runs).toEqual([])
    expect(asked).toEqual([
      ['mode', 'ann'],
      ['check', 'the program', 'ann', 'typescript', true],
    ])
  })

  it("'block' runs a program with only notes, and one whose check failed", async () => {
    for (const check of [async () => report(info), async () => Promise.reject(new Error('engine down'))]) {
      const { runtime: r, runs } = runtime('typescript')
      expect(await execute(r, seam('block', check).preflight)).toEqual({ logs: [], result: 'ran' })
      expect(runs).toEqual(['the program'])
    }
  })

  it("'warn' appends the mistakes of a check that finished before the run, and nothing for notes or a check still running", async () => {
    const withErrors = runtime('typescript')
    expect(await execute(withErrors.runtime, seam('warn', async () => report(error(1, 'a'), error(2, 'b'))).preflight)).toEqual({
      logs: [],
      result: 'ran',
      preflight: `${WARN} 2 problems:\n  line 1, column 2: TS2339 a\n  line 2, column 2: TS2339 b`,
    })
    const notes = runtime('typescript')
    expect(await execute(notes.runtime, seam('warn', async () => report(info)).preflight)).toEqual({ logs: [], result: 'ran' })
    const pending = runtime('typescript')
    expect(await execute(pending.runtime, seam('warn', () => new Promise(() => {})).preflight)).toEqual({ logs: [], result: 'ran' })
    const failing = runtime('typescript')
    expect(await execute(failing.runtime, seam('warn', () => Promise.reject(new Error('engine down'))).preflight)).toEqual({ logs: [], result: 'ran' })
  })

  it("'warn' adds the mistakes to a program's exception after its message, before the captured output, waiting for the check", async () => {
    const { runtime: r } = runtime('typescript', { logs: [{ source: 'console', level: 'log', text: 'printed' }], error: { kind: 'exception', message: 'Error: boom' } })
    let finish!: (value: unknown) => void
    const { preflight } = seam('warn', () => new Promise((resolve) => (finish = resolve)))
    const failed = rejection(execute(r, preflight))
    await new Promise((resolve) => setTimeout(resolve, 0))
    finish(report(error(4, 'no such tool')))
    expect(await failed).toEqual({
      name: 'CodeRunFailedError',
      code: 'CODE_RUN_FAILED',
      message: `code run failed (exception): Error: boom (run_code runs TypeScript/JavaScript programs)\n\n${WARN} 1 problem:\n  line 4, column 2: TS2339 no such tool\nCaptured output:\nprinted`,
    })
  })

  it(`'warn' waits at most ${WARN_WAIT_ON_FAILURE_MS} ms for the check after an exception; other failures never wait`, async () => {
    vi.useFakeTimers()
    expect(WARN_WAIT_ON_FAILURE_MS).toBe(2000)
    const { runtime: r } = runtime('typescript', { error: { kind: 'exception', message: 'Error: boom' } })
    let settled = false
    const failed = rejection(execute(r, seam('warn', () => new Promise(() => {})).preflight)).finally(() => (settled = true))
    await vi.advanceTimersByTimeAsync(1999)
    expect(settled).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(await failed).toEqual({ name: 'CodeRunFailedError', code: 'CODE_RUN_FAILED', message: 'code run failed (exception): Error: boom (run_code runs TypeScript/JavaScript programs)' })
    expect(vi.getTimerCount()).toBe(0)
    // A timeout is not the program's mistake: it fails at once, without the check's text.
    const timedOut = runtime('typescript', { error: { kind: 'timeout', message: 'wall budget' } })
    expect(await rejection(execute(timedOut.runtime, seam('warn', async () => report(error(1, 'x'))).preflight))).toEqual({
      name: 'CodeRunFailedError',
      code: 'CODE_RUN_FAILED',
      message: 'code run failed (timeout): wall budget',
    })
  })

  it('asks plan approval before the run and releases it after, also when the run fails; a denial runs nothing', async () => {
    const order: string[] = []
    const approvals: unknown[] = []
    const approvePlan = async (input: unknown) => {
      approvals.push(input)
      order.push('approved')
      return () => void order.push('released')
    }
    const ok = runtime('typescript')
    const okRun = ok.runtime as { run: (request: { program: string }) => Promise<unknown> }
    const run = okRun.run
    okRun.run = async (request) => (order.push('ran'), run(request))
    expect(await execute(ok.runtime, seam('off', async () => report(), { approvePlan }).preflight)).toEqual({ logs: [], result: 'ran' })
    expect(order).toEqual(['approved', 'ran', 'released'])
    expect(approvals).toEqual([{ code: 'the program', description: 'd', language: 'typescript', run: expect.objectContaining({ callId: 'c1' }) }])

    order.length = 0
    const failing = runtime('typescript', { error: { kind: 'timeout', message: 't' } })
    await rejection(execute(failing.runtime, seam('off', async () => report(), { approvePlan }).preflight))
    expect(order).toEqual(['approved', 'released'])

    const denied = runtime('typescript')
    const denial = new ToolError('DENIED_BY_APPROVAL', 'the plan was denied')
    expect(await rejection(execute(denied.runtime, seam('block', async () => report(), { approvePlan: () => Promise.reject(denial) }).preflight))).toEqual({
      name: 'ToolError',
      code: 'DENIED_BY_APPROVAL',
      message: 'the plan was denied',
    })
    expect(denied.runs).toEqual([])
  })

  it('without a code runtime, neither checks nor asks approval: the run fails clearly', async () => {
    const approvals: unknown[] = []
    const { preflight, asked } = seam('block', async () => report(error(1, 'x')), { approvePlan: async (input) => (approvals.push(input), () => {}) })
    expect(await rejection(execute(undefined, preflight))).toEqual({
      name: 'ToolError',
      code: 'CODE_RUN_FAILED',
      message: 'run_code is unavailable: no code runtime is configured (ToolRuntimeOptions.codeRuntime)',
    })
    expect(asked).toEqual([['mode', 'ann']])
    expect(approvals).toEqual([])
  })
})
