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
