import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createShopData, registerDemoTools } from '../../../demo/tools/index.js'
import {
  TASK_INSTRUCTIONS,
  TASK_QUESTION,
  accountRun,
  codeScript,
  nativeScript,
  parseAnswer,
  renderAnswer,
  runAgentLoop,
  runScriptedTask,
  scriptedModel,
  type ChatMessage,
  type ScriptedTaskRun,
  type TaskAnswer,
  type ToolMessage,
} from '../../../examples/agent-loop/index.js'
import { createToolRuntime, type ToolRuntime } from '../../../src/index.js'

/** The answer computed straight from the data set, sharing no code with the example. */
function expectedAnswer(): TaskAnswer {
  const data = createShopData()
  const newest = data.orders.reduce((a, b) => (Date.parse(b.createdAt) > Date.parse(a.createdAt) ? b : a))
  const end = Date.parse(newest.createdAt)
  const start = end - 90 * 24 * 60 * 60 * 1000
  const inWindow = data.orders.filter((o) => o.status === 'delivered' && Date.parse(o.createdAt) >= start && Date.parse(o.createdAt) <= end)
  const customerIds = [...new Set(inWindow.map((o) => o.customerId))]
  const rows = customerIds.map((customerId) => {
    const own = inWindow.filter((o) => o.customerId === customerId)
    const quantity = (productId: string): number =>
      own.flatMap((o) => o.items).filter((i) => i.productId === productId).reduce((sum, i) => sum + i.quantity, 0)
    const productIds = [...new Set(own.flatMap((o) => o.items.map((i) => i.productId)))].sort()
    const topProductId = productIds.reduce((best, id) => (quantity(id) > quantity(best) ? id : best))
    return {
      customerId,
      name: data.customers.find((c) => c.id === customerId)!.name,
      spentCents: own.reduce((sum, o) => sum + o.items.reduce((s, i) => s + i.quantity * i.unitPriceCents, 0), 0),
      orders: own.length,
      topProductId,
      topProductName: data.products.find((p) => p.id === topProductId)!.name,
      topProductQuantity: quantity(topProductId),
    }
  })
  rows.sort((a, b) => b.spentCents - a.spentCents || a.customerId.localeCompare(b.customerId))
  return { since: new Date(start).toISOString(), until: newest.createdAt, customers: rows.slice(0, 3) }
}

const toolMessages = (messages: readonly ChatMessage[]): ToolMessage[] => messages.filter((m): m is ToolMessage => m.role === 'tool')

describe('the scripted agent loop over the demo tools', () => {
  let native: ScriptedTaskRun
  let code: ScriptedTaskRun
  beforeAll(async () => {
    native = await runScriptedTask('native')
    code = await runScriptedTask('code')
  })

  it('answers the same, correctly, in both modes', () => {
    const expected = expectedAnswer()
    expect(expected.customers).toHaveLength(3)
    expect(native.answer).toEqual(expected)
    expect(code.answer).toEqual(expected)
    expect(code.answerText).toBe(native.answerText)
    expect(native.answerText).toBe(renderAnswer(expected))
  })

  it('code mode sends exactly one tool call, run_code, whose sub-calls do the work', () => {
    expect(code.toolCalls).toBe(1)
    const calls = code.messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls : []))
    expect(calls.map((c) => c.name)).toEqual(['run_code'])
    expect(code.requests).toHaveLength(2)
    const results = toolMessages(code.messages)
    expect(results).toHaveLength(1)
    expect(results[0]!.isError).toBe(false)
    // Only the printed answer re-enters the context, never the order records.
    expect(results[0]!.content).not.toContain('"orders"')
    expect(results[0]!.content.trim()).toBe(code.answerText)
    // head + last + one page + 3 × (customer, product)
    expect(code.executedCalls).toBe(9)
  })

  it('native mode makes the calls step by step and appends every result', () => {
    const assistantTurns = native.messages.filter((m) => m.role === 'assistant')
    const calls = assistantTurns.flatMap((m) => m.toolCalls)
    expect(native.toolCalls).toBe(calls.length)
    expect(new Set(calls.map((c) => c.name))).toEqual(new Set(['list_orders', 'get_customer', 'get_product']))
    const results = toolMessages(native.messages)
    expect(results.map((r) => r.toolCallId)).toEqual(calls.map((c) => c.id))
    expect(results.every((r) => !r.isError)).toBe(true)
    // The delivered orders of the window came back as JSON records into the history.
    expect(results.some((r) => r.content.includes('"status": "delivered"'))).toBe(true)
    // One request per model turn; each request's history is a prefix of the final one.
    expect(native.requests).toHaveLength(assistantTurns.length)
    for (const request of native.requests) expect(native.messages.slice(0, request.messages.length)).toEqual(request.messages)
    expect(native.requests.map((r) => r.tools.map((t) => t.name))[0]).toContain('list_orders')
    expect(code.requests[0]!.tools.map((t) => t.name)).toEqual(['run_code'])
  })

  it('code mode puts far less tool output into the context (accounting in characters)', () => {
    const chars = (text: string): number => text.length
    const a = accountRun(native.requests, native.messages, chars)
    const b = accountRun(code.requests, code.messages, chars)
    expect(b.toolResults).toBeLessThan(a.toolResults * 0.1)
    expect(a.toolResults).toBe(toolMessages(native.messages).reduce((sum, m) => sum + `tool ${m.name}:\n${m.content}`.length, 0))
    expect(a.inputTotalUncached).toBeGreaterThanOrEqual(a.inputTotal)
    expect(a.perRequest).toHaveLength(native.requests.length)
  })
})

describe('runAgentLoop', () => {
  let runtime: ToolRuntime | undefined
  afterEach(async () => {
    await runtime?.dispose()
    runtime = undefined
  })

  const nativeRuntime = (): ToolRuntime => {
    runtime = createToolRuntime({ mode: 'native' })
    registerDemoTools(runtime)
    return runtime
  }

  it('overlaps the concurrency-safe calls of one model turn', async () => {
    const rt = nativeRuntime()
    let inFlight = 0
    let peak = 0
    rt.on('tools/execute', async (_execution, next) => {
      inFlight++
      peak = Math.max(peak, inFlight)
      try {
        await new Promise((resolve) => setTimeout(resolve, 5))
        return await next()
      } finally {
        inFlight--
      }
    })
    const run = await runAgentLoop({ runtime: rt, model: scriptedModel(nativeScript), instructions: TASK_INSTRUCTIONS, question: TASK_QUESTION })
    const widest = Math.max(...run.messages.map((m) => (m.role === 'assistant' ? m.toolCalls.length : 0)))
    expect(widest).toBe(6)
    expect(peak).toBe(widest)
  })

  it('rejects a model that never answers within maxRequests (INVALID_OPTIONS)', async () => {
    const rt = nativeRuntime()
    let asked = 0
    const model = {
      respond: () => ({ type: 'tool-calls' as const, text: '', calls: [{ id: `c${++asked}`, name: 'get_product', arguments: { id: 'P001' } }] }),
    }
    await expect(runAgentLoop({ runtime: rt, model, instructions: '', question: 'q', maxRequests: 3 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    expect(asked).toBe(3)
  })

  it('rejects a bad maxRequests and a turn with neither calls nor answer (INVALID_OPTIONS)', async () => {
    const rt = nativeRuntime()
    const answer = { respond: () => ({ type: 'answer' as const, text: 'x' }) }
    await expect(runAgentLoop({ runtime: rt, model: answer, instructions: '', question: 'q', maxRequests: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    const empty = { respond: () => ({ type: 'tool-calls' as const, text: '', calls: [] }) }
    await expect(runAgentLoop({ runtime: rt, model: empty, instructions: '', question: 'q' })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
  })

  it('reports a failed call to the model as an error tool message, not a loop failure', async () => {
    const rt = nativeRuntime()
    const model = scriptedModel(function* () {
      const results = yield { type: 'tool-calls', text: '', calls: [{ id: 'c1', name: 'get_customer', arguments: { id: 'C999' } }] }
      yield { type: 'answer', text: results[0]!.isError ? 'not found' : 'found' }
    })
    const run = await runAgentLoop({ runtime: rt, model, instructions: '', question: 'q' })
    expect(run.answer).toBe('not found')
    expect(toolMessages(run.messages)[0]).toMatchObject({ isError: true, name: 'get_customer' })
  })

  it('fails the scripts with TOOL_FAILED when a call they depend on fails', async () => {
    // Under native presentation run_code is an unknown tool: the code script cannot go on.
    const rt = nativeRuntime()
    await expect(runAgentLoop({ runtime: rt, model: scriptedModel(codeScript), instructions: '', question: 'q' })).rejects.toMatchObject({ code: 'TOOL_FAILED' })
    // With no orders the native script finds no newest order.
    const empty = createToolRuntime({ mode: 'native' })
    try {
      registerDemoTools(empty, { include: ['shop'], shop: { orders: 0 } })
      await expect(runAgentLoop({ runtime: empty, model: scriptedModel(nativeScript), instructions: '', question: 'q' })).rejects.toMatchObject({ code: 'TOOL_FAILED' })
    } finally {
      await empty.dispose()
    }
  })

  it("appends every result's additionalContexts after all of the step's results, in call order (the post-result FIFO)", async () => {
    const rt = createToolRuntime({ mode: 'native' })
    runtime = rt
    for (const name of ['first', 'second']) {
      rt.register({
        name,
        description: name,
        parameters: { type: 'object' },
        output: { schema: { type: 'string' }, render: (_a: unknown, v: string) => [{ type: 'text', text: v }] },
        execute: (_args: unknown, exec: { deferContext(c: { source: string; content: string }): void }) => {
          exec.deferContext({ source: name, content: `${name} context 1` })
          exec.deferContext({ source: name, content: `${name} context 2` })
          return `${name} result`
        },
      } as never)
    }
    let seen: readonly ToolMessage[] = []
    const model = scriptedModel(function* () {
      seen = yield {
        type: 'tool-calls',
        text: '',
        calls: [
          { id: 'c1', name: 'first', arguments: {} },
          { id: 'c2', name: 'second', arguments: {} },
        ],
      }
      yield { type: 'answer', text: 'done' }
    })
    const run = await runAgentLoop({ runtime: rt, model, instructions: '', question: 'q' })
    expect(run.messages.slice(2).map((m) => `${m.role}:${m.role === 'user' ? `${m.source}:` : ''}${m.content}`)).toEqual([
      'assistant:',
      'tool:first result',
      'tool:second result',
      'user:first:first context 1',
      'user:first:first context 2',
      'user:second:second context 1',
      'user:second:second context 2',
      'assistant:done',
    ])
    // The script still reads exactly the tool messages that answer its calls.
    expect(seen.map((m) => m.content)).toEqual(['first result', 'second result'])
  })

  it('fails with INVALID_OPTIONS when a script ends without answering', async () => {
    const rt = nativeRuntime()
    const model = scriptedModel(function* () {
      yield { type: 'tool-calls', text: '', calls: [{ id: 'c1', name: 'get_product', arguments: { id: 'P001' } }] }
    })
    await expect(runAgentLoop({ runtime: rt, model, instructions: '', question: 'q' })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
  })
})

describe('runScriptedTask and the answer format', () => {
  it('rejects an unknown mode (INVALID_OPTIONS)', async () => {
    await expect(runScriptedTask('both' as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
  })

  it('round-trips answers and rejects other text (INVALID_OPTIONS)', () => {
    const answer = expectedAnswer()
    expect(parseAnswer(renderAnswer(answer))).toEqual(answer)
    const single: TaskAnswer = {
      since: 'a',
      until: 'b',
      customers: [{ customerId: 'C001', name: 'A B', spentCents: 123456789, orders: 1, topProductId: 'P001', topProductName: 'X (Mk2)', topProductQuantity: 1 }],
    }
    expect(renderAnswer(single)).toContain('$1,234,567.89 on 1 order;')
    expect(parseAnswer(renderAnswer(single))).toEqual(single)
    expect(() => parseAnswer('I do not know')).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => parseAnswer(`${renderAnswer(answer)}\n9. nonsense`)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
  })
})
