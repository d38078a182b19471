/**
 * A tool's `preview` (issue 31, item 6): what a call will do, shown to the person asked
 * to approve it. Called only for a call that asks, after its arguments validated, with
 * the call's signal; bounded in time (a throw, a hang, a non-string → "preview
 * unavailable: <reason>", never a blocked request) and in bytes (`renderApprovalPreview`:
 * escaped, cut with a note). It travels on the request and reaches `pending()` (in memory
 * and through a store) and the MCP elicitation text.
 */
import { describe, expect, it } from 'vitest'
import {
  createApprovalBroker,
  DEFAULT_PREVIEW_RENDER_BYTES,
  PREVIEW_TIMEOUT_MS,
  renderApprovalPreview,
} from '../../../src/approvals/index.js'
import { previewOfCall } from '../../../src/approvals/preview.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { ToolError } from '../../../src/errors.js'
import { questionText } from '../../../src/mcp/_elicitation.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ApprovalRequest, ToolPreviewContext } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { nextRequest, programResult, runCode, setup, until } from './helpers.js'

const bytes = (text: string): number => new TextEncoder().encode(text).length

describe('renderApprovalPreview', () => {
  it('keeps lines, shows control, bidi and zero-width characters as ⟨U+XXXX⟩, and is idempotent', () => {
    const text = 'overwrites a.ts\n-old\u202eline\r\n+new\u200bline\u0007\ttab'
    const shown = renderApprovalPreview(text)
    expect(shown).toBe('overwrites a.ts\n-old⟨U+202E⟩line\n+new⟨U+200B⟩line⟨U+0007⟩\ttab')
    expect(renderApprovalPreview(shown)).toBe(shown)
  })

  it('cuts at the byte budget on a line boundary and says how much it left out', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `+line ${i}`)
    const shown = renderApprovalPreview(lines.join('\n'))
    expect(bytes(shown)).toBeLessThanOrEqual(DEFAULT_PREVIEW_RENDER_BYTES)
    const last = shown.split('\n').at(-1)!
    const kept = shown.split('\n').length - 1
    expect(last).toBe(`… preview cut: ${1000 - kept} more lines (${lines.slice(kept).join('\n').length} characters) not shown (the prompt's budget of ${DEFAULT_PREVIEW_RENDER_BYTES} bytes)`)
    expect(shown.split('\n').slice(0, kept)).toEqual(lines.slice(0, kept))
    expect(renderApprovalPreview(shown)).toBe(shown)
  })

  it('cuts a long line and counts the rest of it; a smaller budget is honoured (at least 512 bytes)', () => {
    const shown = renderApprovalPreview(`${'x'.repeat(1000)}\nend`)
    expect(shown).toBe(`${'x'.repeat(300)} … [700 more characters of this line not shown]\nend`)
    const small = renderApprovalPreview('é'.repeat(250).concat('\n').repeat(40), { maxBytes: 10 })
    expect(bytes(small)).toBeLessThanOrEqual(512)
    expect(small).toContain('… preview cut:')
  })

  it('bounds a huge preview by what it shows (8 MiB, no line break, multi-byte)', () => {
    const shown = renderApprovalPreview('€'.repeat(8 * 1024 * 1024))
    expect(bytes(shown)).toBeLessThanOrEqual(DEFAULT_PREVIEW_RENDER_BYTES)
    expect(shown).toContain(`[${8 * 1024 * 1024 - 300} more characters of this line not shown]`)
  })

  it('says a non-string preview is unavailable', () => {
    expect(renderApprovalPreview(42)).toBe("preview unavailable: the tool's preview answered number, not text")
    expect(renderApprovalPreview(null)).toBe("preview unavailable: the tool's preview answered null, not text")
  })
})

describe('previewOfCall', () => {
  const execution = { callId: 'c1', name: 't', arguments: { path: 'a' } }

  it('is undefined for a tool without a preview', async () => {
    expect(await previewOfCall({}, execution, new AbortController().signal)).toBeUndefined()
    expect(await previewOfCall(undefined, execution, AbortSignal.abort())).toBeUndefined()
  })

  it('passes the arguments and a context; the context signal is aborted once the preview is no longer awaited', async () => {
    let seen: ToolPreviewContext | undefined
    const text = await previewOfCall({ preview: (args: { path: string }, ctx: ToolPreviewContext) => ((seen = ctx), `writes ${args.path}`) }, execution, new AbortController().signal)
    expect(text).toBe('writes a')
    expect(seen?.callId).toBe('c1')
    expect(seen?.name).toBe('t')
    expect(seen?.signal.aborted).toBe(true)
  })

  it('a throw, a rejection, a non-string, a hang and a cancelled call each give "preview unavailable: <reason>"', async () => {
    const live = new AbortController().signal
    expect(await previewOfCall({ preview: () => { throw new TypeError('boom') } }, execution, live)).toBe('preview unavailable: it threw TypeError: boom')
    expect(await previewOfCall({ preview: () => Promise.reject(new Error('no\nfile')) }, execution, live)).toBe('preview unavailable: it threw Error: no file')
    expect(await previewOfCall({ preview: () => 7 as unknown as string }, execution, live)).toBe('preview unavailable: it answered number, not text')
    let hungSignal: AbortSignal | undefined
    const hang = { preview: (_a: unknown, ctx: ToolPreviewContext) => ((hungSignal = ctx.signal), new Promise<string>(() => {})) }
    expect(await previewOfCall(hang, execution, live, 20)).toBe('preview unavailable: it did not answer within 20 ms')
    expect(hungSignal?.aborted).toBe(true)
    const controller = new AbortController()
    const pending = previewOfCall(hang, execution, controller.signal)
    controller.abort()
    expect(await pending).toBe('preview unavailable: the call was cancelled')
    expect(await previewOfCall(hang, execution, AbortSignal.abort())).toBe('preview unavailable: the call was cancelled')
  })
})

describe('defineTool({ preview }) and the definition validator', () => {
  const base = {
    name: 'w',
    description: 'writes',
    parameters: { path: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: () => [] },
    execute: () => 'ok',
  } as const

  it('refuses a preview that is not a function, or an accessor, as INVALID_DEFINITION', () => {
    expect(() => defineTool({ ...base, preview: 'diff' as never })).toThrow(expect.objectContaining({ code: 'INVALID_DEFINITION', message: 'tool "w": preview must be a function when present' }))
    const withGetter = Object.defineProperty({ ...base }, 'preview', { get: () => () => 'x', enumerable: true })
    expect(() => defineTool(withGetter)).toThrow(expect.objectContaining({ code: 'INVALID_DEFINITION', message: 'tool "w": preview must be a data property, not an accessor' }))
    const runtime = createToolRuntime()
    expect(() => runtime.register({ ...base, parameters: { type: 'object', properties: {} }, preview: 3 } as never)).toThrow(expect.objectContaining({ code: 'INVALID_DEFINITION' }))
  })

  it('a defined preview receives only validated arguments (invalid ones throw inside it: unavailable)', async () => {
    const tool = defineTool({ ...base, preview: (args) => `writes ${args.path}` })
    expect(await tool.preview!({ path: 'a' }, { signal: new AbortController().signal, callId: 'c', name: 'w' })).toBe('writes a')
    expect(await previewOfCall(tool, { callId: 'c', name: 'w', arguments: { path: 3 } }, new AbortController().signal)).toMatch(/^preview unavailable: it threw ToolArgsError/)
  })
})

/** A runtime whose gate asks for `write`; `preview` is the tool's preview. */
function fixture(preview: ((args: { path: string }, ctx: ToolPreviewContext) => string | Promise<string>) | undefined, broker = createApprovalBroker()) {
  const runtime = createToolRuntime({ approvals: broker })
  const previewed: string[] = []
  runtime.register(
    defineTool({
      name: 'write',
      description: 'writes',
      parameters: { path: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => `wrote ${args.path}`,
      ...(preview === undefined
        ? {}
        : {
            preview: (args: { path: string }, ctx: ToolPreviewContext) => {
              previewed.push(args.path)
              return preview(args, ctx)
            },
          }),
    }),
  )
  runtime.register(
    defineTool({
      name: 'read',
      description: 'reads',
      parameters: {},
      output: { schema: { type: 'string' }, render: () => [] },
      execute: () => 'read',
      preview: () => {
        previewed.push('read')
        return 'never asked'
      },
    }),
  )
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'write' ? { kind: 'ask', reason: 'writes' } : decision))
  return { runtime, broker, previewed }
}

async function firstPending(broker: { pending(): unknown }): Promise<{ id: string; preview?: string; summary: string }> {
  return until(async () => ((await broker.pending()) as { id: string; preview?: string; summary: string }[])[0], 'a request (nothing asked)')
}

describe('a preview travels on the request to every listing', () => {
  it('pending() carries the rendered preview beside the summary; the summary is unchanged', async () => {
    const { runtime, broker, previewed } = fixture((args) => `overwrites ${args.path}: 3 lines → 1 line\n-a\u202e\n-b\n-c\n+d`)
    const running = runtime.execute({ callId: 'c1', name: 'write', arguments: { path: 'README.md' }, signal: new AbortController().signal })
    const pending = await firstPending(broker)
    expect(pending.preview).toBe('overwrites README.md: 3 lines → 1 line\n-a⟨U+202E⟩\n-b\n-c\n+d')
    expect(pending.summary).toBe('path: "README.md"')
    await broker.decide(pending.id, { decision: 'allow' })
    expect((await running).isError).toBe(false)
    expect(previewed).toEqual(['README.md'])
    await runtime.dispose()
  })

  it('is never called for a call that does not ask, nor for one whose arguments are invalid', async () => {
    const { runtime, previewed } = fixture(() => 'x')
    expect((await runtime.execute({ callId: 'c2', name: 'read', arguments: {}, signal: new AbortController().signal })).isError).toBe(false)
    const invalid = await runtime.execute({ callId: 'c3', name: 'write', arguments: { path: 5 }, signal: new AbortController().signal })
    expect(invalid.isError && invalid.error.info?.code).toBe('INVALID_ARGS')
    expect(previewed).toEqual([])
    await runtime.dispose()
  })

  it('a preview that throws or hangs never blocks the request: the card says why it is unavailable', async () => {
    const thrown = fixture(() => {
      throw new ToolError('TOOL_FAILED', 'disk gone')
    })
    const a = thrown.runtime.execute({ callId: 'c4', name: 'write', arguments: { path: 'a' }, signal: new AbortController().signal })
    const pendingA = await firstPending(thrown.broker)
    expect(pendingA.preview).toBe('preview unavailable: it threw ToolError: disk gone')
    await thrown.broker.decide(pendingA.id, { decision: 'deny' })
    expect((await a).isError).toBe(true)

    const hung = fixture(() => new Promise<string>(() => {}))
    const b = hung.runtime.execute({ callId: 'c5', name: 'write', arguments: { path: 'b' }, signal: new AbortController().signal })
    const pendingB = await firstPending(hung.broker)
    expect(pendingB.preview).toBe(`preview unavailable: it did not answer within ${PREVIEW_TIMEOUT_MS} ms`)
    await hung.broker.decide(pendingB.id, { decision: 'allow' })
    expect((await b).isError).toBe(false)
    await thrown.runtime.dispose()
    await hung.runtime.dispose()
  })

  it('a call cancelled while its preview runs is withdrawn, never asked', async () => {
    const { runtime, broker } = fixture(() => new Promise<string>(() => {}))
    const controller = new AbortController()
    const running = runtime.execute({ callId: 'c6', name: 'write', arguments: { path: 'a' }, signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 20))
    controller.abort()
    const result = await running
    expect(result.isError && result.error.info?.code).toBe('ABORTED_BEFORE_DISPATCH')
    expect(await broker.pending()).toEqual([])
    await runtime.dispose()
  })

  it('a broker over a store keeps the preview (and refuses a stored record whose preview is oversized)', async () => {
    const store = createMemoryStore()
    const broker = createApprovalBroker({ store })
    const { runtime } = fixture((args) => `new file ${args.path} (1 line)\n+hello`, broker as never)
    const running = runtime.execute({ callId: 'c7', name: 'write', arguments: { path: 'n.md' }, signal: new AbortController().signal })
    const pending = await firstPending(broker)
    expect(pending.preview).toBe('new file n.md (1 line)\n+hello')
    // A second broker on the same store (another process) lists it with its preview.
    const other = createApprovalBroker({ store })
    expect((await other.pending()).map((p) => p.preview)).toEqual(['new file n.md (1 line)\n+hello'])
    // A hand-edited record whose preview is over the renderer's bound is skipped as malformed.
    const { entries } = await store.list('approvals/open/')
    expect(entries).toHaveLength(1)
    const k = entries[0]!.key
    const record = JSON.parse((await store.get(k))!.value) as { approval: { preview: string } }
    record.approval.preview = 'x'.repeat(5000)
    await store.put(k, JSON.stringify(record))
    expect(await other.pending()).toEqual([])
    expect(other.lastListing.malformed).toBe(1)
    await broker.decide(pending.id, { decision: 'deny' }).catch(() => undefined)
    controllerAbort(running)
    await other.dispose()
    await broker.dispose()
    await runtime.dispose()
  })

  it('the handler is public: a caller\'s own preview is rendered (bounded, escaped), whatever it is', async () => {
    const broker = createApprovalBroker()
    const execution = { callId: 'd1', name: 'x', arguments: {}, signal: new AbortController().signal } as unknown as ApprovalRequest['execution']
    void Promise.resolve(broker.handler({ execution, preview: `${'line\u2028\n'.repeat(5000)}` } as ApprovalRequest)).catch(() => undefined)
    void Promise.resolve(broker.handler({ execution: { ...execution, callId: 'd2' }, preview: { evil: true } } as unknown as ApprovalRequest)).catch(() => undefined)
    await until(async () => (await broker.pending()).length === 2)
    const listed = await broker.pending()
    const [a, b] = ['d1', 'd2'].map((callId) => listed.find((request) => request.callId === callId))
    expect(bytes(a!.preview!)).toBeLessThanOrEqual(DEFAULT_PREVIEW_RENDER_BYTES)
    expect(a!.preview).toMatch(/^line⟨U\+2028⟩\n/)
    expect(a!.preview).toContain('… preview cut:')
    expect(b!.preview).toBe("preview unavailable: the tool's preview answered object, not text")
    broker.dispose()
  })

  it('the MCP elicitation question shows the preview after the arguments', () => {
    const execution = { callId: 'e1', name: 'write', arguments: { path: 'README.md' }, signal: new AbortController().signal } as unknown as ApprovalRequest['execution']
    const text = questionText({ execution, parameters: { type: 'object', properties: { path: { type: 'string' } } }, reason: 'writes', preview: 'overwrites README.md\n-a\n+b' } as ApprovalRequest)
    expect(text).toBe('Allow the tool call write (writes)?\nArguments:\npath: "README.md"\nWhat it will do:\noverwrites README.md\n-a\n+b')
  })
})

describe('a preview inside Code Mode', () => {
  /** The approval fixture plus `annotate` (asks, has a preview that counts its calls). */
  function withPreview(plans: boolean) {
    const fixture = setup({ plans }, { mode: 'code', codeRuntime: createInProcessRuntime() })
    const previewed: number[] = []
    fixture.runtime.register(
      defineTool({
        name: 'annotate',
        description: 'annotates',
        parameters: { n: { type: 'number', required: true } },
        output: { schema: { type: 'number' }, render: () => [] },
        execute: (args) => args.n,
        preview: (args) => {
          previewed.push(args.n)
          return `annotates item ${args.n}`
        },
      }),
    )
    fixture.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'annotate' ? { kind: 'ask', reason: 'annotating' } : decision))
    return { ...fixture, previewed }
  }

  it('a program\'s asking sub-call carries its preview', async () => {
    const { broker, runtime, previewed } = withPreview(false)
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, 'return await tools.annotate({ n: 7 })')
    const request = await asked
    expect(request.preview).toBe('annotates item 7')
    await broker.decide(request.id, { decision: 'allow' })
    expect(programResult(await result)).toBe(7)
    expect(previewed).toEqual([7])
  })

  it('a plan has no preview, and a call the plan pre-approved is never previewed (nobody is asked)', async () => {
    const { broker, runtime, previewed } = withPreview(true)
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, 'return (await tools.annotate({ n: 1 })) + (await tools.annotate({ n: 2 }))')
    const request = await asked
    expect(request.kind).toBe('plan')
    expect(request.preview).toBeUndefined()
    await broker.decide(request.id, { decision: 'allow' })
    expect(programResult(await result)).toBe(3)
    expect(previewed).toEqual([])
  })
})

/** Ends a call left waiting by a test that denied it through another path. */
function controllerAbort(running: Promise<unknown>): void {
  void running.catch(() => undefined)
}
