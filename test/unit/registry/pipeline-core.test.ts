import { describe, expect, it } from 'vitest'
import { HookBus } from '../../../src/registry/hooks.js'
import { InFlightCalls } from '../../../src/registry/in-flight.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { executePipeline, type PipelineCore } from '../../../src/registry/pipeline.js'
import { ScopedList } from '../../../src/registry/scoped-list.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import type { ToolGuard } from '../../../src/types.js'
import { call, deferred, echoTool, tick } from './helpers.js'
import type { PipelineSchedule } from '../../../src/registry/schedule.js'

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
    await executePipeline(c, call('nope'), { scopeDisposed: true })
    expect(results).toEqual(['INVALID_EXECUTION', 'UNKNOWN_TOOL', 'DISPOSED'])
  })

  it('a schedule is handed each phase once, in order, from the loop: policy stages, then dispatch, then the tail', async () => {
    const c = core()
    const seen: string[] = []
    c.hooks.preExecute.add((d) => (seen.push('gate'), d), undefined)
    c.guards.add(() => void seen.push('guard'), undefined)
    c.hooks.execute.add((_e, next) => (seen.push('wrapper'), next()), undefined)
    c.hooks.postExecute.add((d) => (seen.push('post'), d), undefined)
    c.hooks.result.add(() => void seen.push('result'), undefined)
    const schedule: PipelineSchedule = {
      phase: async (phase, run) => {
        seen.push(`enter:${phase}`)
        await run()
        seen.push(`leave:${phase}`)
      },
    }
    await executePipeline(c, call('nope'), { schedule })
    // A call that never dispatches takes no dispatch turn, but still its tail's.
    expect(seen).toEqual(['enter:policy', 'leave:policy', 'enter:tail', 'result', 'leave:tail'])
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    seen.length = 0
    const result = await executePipeline(c, call('echo', { text: 'hi' }), { schedule })
    expect(result).toMatchObject({ isError: false, value: 'hi' })
    expect(seen).toEqual(['enter:policy', 'gate', 'guard', 'leave:policy', 'enter:dispatch', 'wrapper', 'leave:dispatch', 'enter:tail', 'post', 'result', 'leave:tail'])
  })

  it('a call made through a disposed agent scope ends DISPOSED (the `how` of the one execute signature)', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    expect(await executePipeline(c, call('echo'), { scopeDisposed: true })).toMatchObject({ isError: true, error: { info: { code: 'DISPOSED' } } })
    expect(await executePipeline(c, call('echo'), { scopeDisposed: false })).toMatchObject({ isError: false })
  })
})

describe('the pipeline when its collaborators break (never rejects, says what happened)', () => {
  const turns = (dispatch: (run: () => Promise<void>) => Promise<void>): PipelineSchedule => ({
    phase: (phase, run) => (phase === 'dispatch' ? dispatch(run) : run()),
  })

  it('a scheduler that abandons a call before starting it: ABORTED_BEFORE_DISPATCH, the body never ran', async () => {
    const c = core()
    let ran = false
    c.layers.add(undefined, detachToolDefinition(echoTool('echo', () => ((ran = true), 'ran'))))
    const result = await executePipeline(c, call('echo'), { schedule: turns(() => Promise.reject(new Error('batch cancelled'))) })
    expect(result).toMatchObject({ isError: true, error: { info: { code: 'ABORTED_BEFORE_DISPATCH' } } })
    expect(ran).toBe(false)
  })

  it('a scheduler that settles a dispatch turn without running it abandoned the call too', async () => {
    const c = core()
    let ran = false
    c.layers.add(undefined, detachToolDefinition(echoTool('echo', () => ((ran = true), 'ran'))))
    const result = await executePipeline(c, call('echo'), { schedule: turns(async () => {}) })
    expect(result).toMatchObject({ isError: true, error: { info: { code: 'ABORTED_BEFORE_DISPATCH' } } })
    expect(ran).toBe(false)
  })

  it("a scheduler that breaks after starting the body: TOOL_FAILED with its message and the body's deferred contexts", async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo', (_args, run) => (run.deferContext({ source: 'echo', content: 'kept' }), 'ran'))))
    const schedule = turns(async (run) => {
      await run()
      throw new Error('scheduler lost its place')
    })
    const result = await executePipeline(c, call('echo'), { schedule })
    expect(result).toMatchObject({ isError: true, error: { message: 'scheduler lost its place', info: { code: 'TOOL_FAILED' } } })
    expect(result.additionalContexts).toEqual([{ source: 'echo', content: 'kept' }])
  })

  it('a scheduler that gives up while the body still runs: the call waits for the body before it settles', async () => {
    const c = core()
    const body = deferred<string>()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo', () => body.promise)))
    let settled = false
    const schedule = turns((run) => {
      void run()
      return Promise.reject(new Error('scheduler gave up'))
    })
    const pending = executePipeline(c, call('echo'), { schedule }).then((result) => ((settled = true), result))
    await tick()
    expect(settled).toBe(false)
    body.resolve('done')
    expect(await pending).toMatchObject({ isError: true, error: { message: 'scheduler gave up', info: { code: 'TOOL_FAILED' } } })
  })

  it('a scheduler whose policy and tail turns fail costs ordering, never the call: it runs and is published once', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    const published: unknown[] = []
    c.hooks.result.add((_e, r) => void published.push(r), undefined)
    const schedule: PipelineSchedule = {
      phase: (phase, run) => {
        if (phase === 'dispatch') return run()
        // Policy rejects without running; the tail throws synchronously.
        if (phase === 'policy') return Promise.reject(new Error('turn lost'))
        throw new Error('no tail turn')
      },
    }
    const result = await executePipeline(c, call('echo', { text: 'hi' }), { schedule })
    expect(result).toMatchObject({ isError: false, value: 'hi' })
    expect(published).toEqual([result])
  })

  it('a hook bus that throws where nothing should: TOOL_FAILED "internal pipeline error", nothing left in flight', async () => {
    const c = core()
    c.layers.add(undefined, detachToolDefinition(echoTool('echo')))
    const hooks = c.hooks
    const broken = { ...hooks, preExecute: hooks.preExecute, execute: hooks.execute, postExecute: hooks.postExecute, result: { list: () => { throw new Error('bus is gone') } } }
    const result = await executePipeline({ ...c, hooks: broken as unknown as HookBus }, call('echo', { text: 'hi' }))
    expect(result).toEqual({
      isError: true,
      error: { message: 'internal pipeline error: bus is gone', info: { name: 'Error', code: 'TOOL_FAILED' } },
      content: [{ type: 'text', text: 'Error: internal pipeline error: bus is gone' }],
    })
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
