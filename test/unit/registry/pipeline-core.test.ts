import { describe, expect, it } from 'vitest'
import { HookBus } from '../../../src/registry/hooks.js'
import { InFlightCalls } from '../../../src/registry/in-flight.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { executePipeline, type PipelineCore } from '../../../src/registry/pipeline.js'
import { ScopedList } from '../../../src/registry/scoped-list.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import type { ToolGuard } from '../../../src/types.js'
import { call, echoTool } from './helpers.js'

/** A pipeline over hand-built parts: its dependencies are exactly what PipelineCore names. */
function core(): PipelineCore & { layers: ToolLayers; hooks: HookBus; guards: ScopedList<ToolGuard> } {
  const transport = detachToolDefinition(echoTool('run_code_stand_in'))
  const hooks = new HookBus()
  return {
    options: validateRuntimeOptions({}),
    isDisposed: () => false,
    layers: new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: () => {} }),
    hooks,
    guards: new ScopedList<ToolGuard>(),
    calls: new InFlightCalls(),
  }
}

describe('the pipeline on its own (no createToolRuntime)', () => {
  it('runs a registered tool through every stage and leaves nothing in flight', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    const seen: string[] = []
    c.hooks.preExecute.add((d) => (seen.push('gate'), d), undefined)
    c.guards.add(() => void seen.push('guard'), undefined)
    c.hooks.execute.add((_e, next) => (seen.push('wrapper'), next()), undefined)
    c.hooks.postExecute.add((d) => (seen.push('post'), d), undefined)
    c.hooks.result.add(() => void seen.push('result'), undefined)
    const result = await executePipeline(c, call('echo', { text: 'hi' }))
    expect(result).toMatchObject({ isError: false, value: 'hi' })
    expect(seen).toEqual(['gate', 'guard', 'wrapper', 'post', 'result'])
    expect(c.calls.liveTokens.size).toBe(0)
  })

  it('an ending stage skips the rest but never the tail: tools/result sees every outcome once', async () => {
    const c = core()
    const results: string[] = []
    c.hooks.result.add((_e, r) => void results.push(r.isError ? String(r.error.info?.code) : 'OK'), undefined)
    await executePipeline(c, null)
    await executePipeline(c, call('nope'))
    await executePipeline(c, call('nope'), undefined, true)
    expect(results).toEqual(['INVALID_EXECUTION', 'UNKNOWN_TOOL', 'DISPOSED'])
  })

  it('a schedule gets each of its turns exactly once, in order, even for a call that never dispatches', async () => {
    const c = core()
    const turns: string[] = []
    const schedule = {
      beforePolicy: async () => void turns.push('beforePolicy'),
      afterPolicy: () => void turns.push('afterPolicy'),
      dispatch: <T>(task: () => Promise<T>) => (turns.push('dispatch'), task()),
      beforeTail: async () => void turns.push('beforeTail'),
      afterTail: () => void turns.push('afterTail'),
    }
    await executePipeline(c, call('nope'), schedule)
    expect(turns).toEqual(['beforePolicy', 'afterPolicy', 'beforeTail', 'afterTail'])
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    turns.length = 0
    await executePipeline(c, call('echo'), schedule)
    expect(turns).toEqual(['beforePolicy', 'afterPolicy', 'dispatch', 'beforeTail', 'afterTail'])
  })
})

describe('the pipeline when its collaborators break (never rejects, says what happened)', () => {
  const turns = (dispatch: <T>(task: () => Promise<T>) => Promise<T>) => ({
    beforePolicy: async () => {},
    afterPolicy: () => {},
    dispatch,
    beforeTail: async () => {},
    afterTail: () => {},
  })

  it('a scheduler that abandons a call before starting it: ABORTED_BEFORE_DISPATCH, the body never ran', async () => {
    const c = core()
    let ran = false
    c.layers.add(undefined, detachToolDefinition(echoTool('echo', () => ((ran = true), 'ran'))))
    const result = await executePipeline(c, call('echo'), turns(() => Promise.reject(new Error('batch cancelled'))))
    expect(result).toMatchObject({ isError: true, error: { info: { code: 'ABORTED_BEFORE_DISPATCH' } } })
    expect(ran).toBe(false)
  })

  it('a scheduler that breaks after starting the body: TOOL_FAILED with its message and the body\'s deferred contexts', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo', (_args, run) => (run.deferContext({ source: 'echo', content: 'kept' }), 'ran'))))
    const result = await executePipeline(
      c,
      call('echo'),
      turns(async (task) => {
        await task()
        throw new Error('scheduler lost its place')
      }),
    )
    expect(result).toMatchObject({ isError: true, error: { message: 'scheduler lost its place', info: { code: 'TOOL_FAILED' } } })
    expect(result.additionalContexts).toEqual([{ source: 'echo', content: 'kept' }])
  })

  it('a hook bus that throws where nothing should: TOOL_FAILED "internal pipeline error", nothing left in flight', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    const hooks = c.hooks
    const broken = { ...hooks, preExecute: hooks.preExecute, execute: hooks.execute, postExecute: hooks.postExecute, result: { list: () => { throw new Error('bus is gone') } } }
    const result = await executePipeline({ ...c, hooks: broken as unknown as HookBus }, call('echo', { text: 'hi' }))
    expect(result).toMatchObject({ isError: true, error: { message: 'internal pipeline error: bus is gone', info: { code: 'TOOL_FAILED' } } })
    expect(c.calls.liveTokens.size).toBe(0)
  })

  it('the execution a listener sees has own keys only for what the call has (a spread or JSON copy keeps deadline)', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    const keys: string[][] = []
    c.hooks.preExecute.add((d, execution) => (keys.push(Object.keys(execution).sort()), d), undefined)
    await executePipeline(c, call('echo'))
    const deadline = Date.now() + 60_000
    await executePipeline(c, call('echo', {}, { deadline }))
    await executePipeline(c, call('echo', {}, { agent: 'a1' }))
    expect(keys[0]).toEqual(['arguments', 'callId', 'name', 'signal', 'token'])
    expect(keys[1]).toEqual(['arguments', 'callId', 'deadline', 'name', 'signal', 'token'])
    expect(keys[2]).toEqual(['agent', 'arguments', 'callId', 'name', 'signal', 'token'])
  })
})

describe('the gate cannot be loosened by writing to the decision a listener receives', () => {
  it('an agent listener that sets d.kind = "allow" on an earlier ask still leaves the call to approval', async () => {
    const c = core()
    let ran = false
    c.layers.add(undefined, detachToolDefinition(echoTool('pay', () => ((ran = true), 'paid'))))
    c.hooks.preExecute.add(() => ({ kind: 'ask', reason: 'payments need a person' }), undefined)
    const seen: boolean[] = []
    c.hooks.preExecute.add((d) => {
      seen.push(Object.isFrozen(d))
      try {
        ;(d as { kind: string }).kind = 'allow'
      } catch {
        // Frozen: strict-mode code throws; the gate's decision is unchanged either way.
      }
      return { kind: 'allow' }
    }, 'agent-1')
    const result = await executePipeline(c, call('pay', {}, { agent: 'agent-1' }))
    expect(seen).toEqual([true])
    expect(ran).toBe(false)
    expect(result).toMatchObject({ isError: true, error: { info: { code: 'DENIED_BY_APPROVAL' } } })
  })

  it('the first listener receives a frozen allow', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    let received: unknown
    c.hooks.preExecute.add((d) => ((received = d), { kind: 'allow' }), undefined)
    await executePipeline(c, call('echo'))
    expect(received).toEqual({ kind: 'allow' })
    expect(Object.isFrozen(received)).toBe(true)
  })
})
