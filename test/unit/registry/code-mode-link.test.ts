import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { DurableRuns } from '../../../src/durable/runs.js'
import { createCodeModeLink } from '../../../src/registry/code-mode-link.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import type { CodeDispatchEvent, SessionLogEvent, SessionLogSink, ToolCatalog } from '../../../src/runtime-types.js'
import { codeDispatchEvent, echoTool } from './helpers.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'

/** Real layers with no global tool; agent `a` has its own `y` and `x` (registered out of order: binding names are sorted). */
function layers(): ToolLayers {
  const transport = detachToolDefinition(echoTool('run_code_stand_in'))
  const built = new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: () => {} })
  built.openAgent('a')
  built.add('a', detachToolDefinition(echoTool('y')))
  built.add('a', detachToolDefinition(echoTool('x')))
  return built
}

function link(sessionLog?: SessionLogSink) {
  const hooks = new HookBus()
  const options = validateRuntimeOptions(sessionLog === undefined ? {} : { sessionLog })
  const registry = createCodeModeLink({
    options,
    layers: layers(),
    hooks,
    execute: async () => ({ isError: false, value: 1, content: [] }),
    executionMode: () => 'parallel',
  })
  return { registry, hooks }
}

describe('the Code Mode link (the registry as run_code sees it)', () => {
  it('passes the options and the layers through', () => {
    const { registry } = link()
    expect(registry.maxParallelSubCalls).toBe(10)
    expect(registry.maxOutputBytes).toBe(64 * 1024 * 1024)
    expect(registry.codeRuntime()).toBeUndefined()
    expect(registry.bindingNames('a')).toEqual(['x', 'y'])
    expect(registry.bindingNames(undefined)).toEqual([])
    expect(registry.bindingNames('no-such-agent')).toEqual([])
  })

  it("hands a sub-call to the registry's execute with its input only: a program's call takes no batch turn and claims no scope state", async () => {
    const received: unknown[][] = []
    const registry = createCodeModeLink({
      options: validateRuntimeOptions({}),
      layers: layers(),
      hooks: new HookBus(),
      execute: async (...args: unknown[]) => (received.push(args), { isError: false, value: 1, content: [] }),
      executionMode: () => 'exclusive',
    })
    const input = { callId: 's1', name: 'x', arguments: {}, signal: new AbortController().signal }
    const forged = registry.execute as (...args: unknown[]) => Promise<unknown>
    await forged(input, { scopeDisposed: true, schedule: { phase: () => Promise.reject(new Error('never asked')) } })
    expect(received).toEqual([[input]])
  })

  it("runs the agent's code-dispatch-log waterfall, keeping the event when a listener throws or answers garbage", async () => {
    const events: SessionLogEvent[] = []
    const { registry, hooks } = link({ append: (e) => void events.push(e) })
    hooks.add('tools/code-dispatch-log', (e) => ({ ...e, content: [{ type: 'text', text: 'spilled' }] }), 'a')
    hooks.add('tools/code-dispatch-log', () => {
      throw new Error('spill policy broke')
    }, undefined)
    hooks.add('tools/code-dispatch-log', () => ({ type: 'nonsense' }) as never, 'a')
    hooks.add('tools/code-dispatch-log', (e) => ({ ...e, content: [{ type: 'text', text: 'other agent' }] }), 'b')
    await registry.logDispatch(codeDispatchEvent('big'))
    expect(events).toHaveLength(1)
    expect((events[0] as CodeDispatchEvent).content).toEqual([{ type: 'text', text: 'spilled' }])
  })

  it('a throwing session log never reaches the program; live lines go only to a sink that takes them', async () => {
    const throwing: SessionLogSink = {
      append: () => {
        throw new Error('disk full')
      },
    }
    const { registry } = link(throwing)
    expect(() =>
      registry.logDispatchStart({ type: 'tool/code-dispatch-start', parentCallId: 'p', subCallId: 'p:code:1', name: 'x', arguments: {}, startedAt: 0 }),
    ).not.toThrow()
    await expect(registry.logDispatch(codeDispatchEvent('x'))).resolves.toBeUndefined()
    expect(registry.logOutput).toBeUndefined()

    const lines: unknown[] = []
    const streaming = link({
      append: () => {},
      appendLog: (e) => {
        lines.push(e.entry.text)
        throw new Error('socket closed')
      },
    })
    expect(() => streaming.registry.logOutput?.({ type: 'tool/code-log', parentCallId: 'p', entry: { source: 'console', text: 'hi' } })).not.toThrow()
    expect(lines).toEqual(['hi'])
  })
})

const original = codeDispatchEvent('big')

const spilled: CodeDispatchEvent = Object.freeze<CodeDispatchEvent>({ ...original, content: [{ type: 'text', text: 'spilled' }] })

/** Runs the waterfall with one listener answering `answer`; what the next listener and the session log receive. */
async function waterfall(answer: unknown): Promise<{ next: unknown[]; appended: SessionLogEvent[] }> {
  const hooks = new HookBus()
  const appended: SessionLogEvent[] = []
  const next: unknown[] = []
  const registry = createCodeModeLink({
    options: validateRuntimeOptions({ sessionLog: { append: (event: SessionLogEvent) => void appended.push(event) } }),
    layers: layers(),
    hooks,
    execute: async () => ({ isError: false, value: null, content: [] }),
    executionMode: () => 'parallel',
  })
  hooks.add('tools/code-dispatch-log', () => answer as CodeDispatchEvent, 'a')
  hooks.add('tools/code-dispatch-log', (event) => {
    next.push(event)
    return event
  }, 'a')
  await registry.logDispatch(original)
  return { next, appended }
}

describe('the Code Mode link: the code-dispatch-log waterfall', () => {
  it('a complete tool/code-dispatch answer replaces the event for the next listener and the session log', async () => {
    const { next, appended } = await waterfall(spilled)
    expect(next).toEqual([spilled])
    expect(appended).toEqual([spilled])
  })

  it('an answer that is not an object (nothing, null, text) keeps the event as it was', async () => {
    for (const answer of [undefined, null, 'spilled', 7]) {
      const { next, appended } = await waterfall(answer)
      expect(next, String(answer)).toEqual([original])
      expect(appended, String(answer)).toEqual([original])
    }
  })

  it('a function carrying every field of the event is not an event: the event is kept', async () => {
    // A function's own `name` is read-only: define every field instead of assigning it.
    const impostor = () => spilled
    for (const [key, value] of Object.entries(spilled)) Object.defineProperty(impostor, key, { value, enumerable: true })
    expect((impostor as unknown as CodeDispatchEvent).name).toBe('echo')
    const { next, appended } = await waterfall(impostor)
    expect(next).toEqual([original])
    expect(appended[0]).toBe(original)
  })

  it('an answer missing any one required field (or with it of the wrong type) keeps the event', async () => {
    const broken: Record<string, Partial<Record<keyof CodeDispatchEvent, unknown>>> = {
      type: { type: 'tool/code-dispatch-start' },
      subCallId: { subCallId: 1 },
      parentCallId: { parentCallId: undefined },
      name: { name: null },
      isError: { isError: 'false' },
      content: { content: 'spilled' },
    }
    for (const [field, override] of Object.entries(broken)) {
      const { next, appended } = await waterfall({ ...spilled, ...override })
      expect(next, field).toEqual([original])
      expect(appended, field).toEqual([original])
      expect(appended[0], field).toBe(original)
    }
  })
})

describe('the Code Mode link: its members', () => {
  const make = (catalog?: (agent: string | undefined) => ToolCatalog) =>
    createCodeModeLink({
      options: validateRuntimeOptions({}),
      layers: layers(),
      hooks: new HookBus(),
      execute: async () => ({ isError: false, value: null, content: [] }),
      executionMode: () => 'exclusive',
      ...(catalog === undefined ? {} : { catalog }),
    })

  it('offers a catalog member only when the registry gives one', () => {
    const without = make()
    expect(Object.hasOwn(without, 'catalog')).toBe(false)
    expect(Object.keys(without).sort()).toEqual([
      'bindingNames',
      'codeRuntime',
      'execute',
      'executionMode',
      'languages',
      'logDispatch',
      'logDispatchStart',
      'maxOutputBytes',
      'maxParallelSubCalls',
    ])
    const catalog = createToolRuntime().catalog()
    const of = (_agent: string | undefined) => catalog
    expect(make(of).catalog).toBe(of)
  })

  it("offers the registry's durable runs when it has them (a runtime with a store), and no durable member otherwise", () => {
    const durable = new DurableRuns(createMemoryStore())
    const withStore = createCodeModeLink({
      options: validateRuntimeOptions({}),
      layers: layers(),
      hooks: new HookBus(),
      execute: async () => ({ isError: false, value: null, content: [] }),
      executionMode: () => 'exclusive',
      durable,
    })
    expect(withStore.durable).toBe(durable)
    expect(Object.hasOwn(make(), 'durable')).toBe(false)
  })
})
