import { describe, expect, it } from 'vitest'
import { RUN_CODE_TOOL_NAME } from '../../../src/code-mode/registry-seam.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { codeOnlyToolMessage, nativeOnlyToolMessage, offeredNatively, routeBackMessage } from '../../../src/registry/view.js'
import type { ToolsChangedEvent } from '../../../src/runtime-types.js'
import { detachToolDefinition, type RegisteredTool } from '../../../src/schema/tool-definition.js'
import type { ToolCaller, ToolPresentationMode } from '../../../src/types.js'
import { echoTool } from './helpers.js'

const tool = (name: string, callers?: ToolCaller[]): RegisteredTool =>
  detachToolDefinition({ ...echoTool(name), ...(callers === undefined ? {} : { callers }) })

function setup(defaultMode: ToolPresentationMode = 'native') {
  const events: ToolsChangedEvent[] = []
  const transport = detachToolDefinition(echoTool(RUN_CODE_TOOL_NAME))
  const layers = new ToolLayers({ defaultMode, transport: () => transport, onChange: (e) => void events.push(e) })
  layers.add(undefined, tool('both'))
  layers.add(undefined, tool('codeOnly', ['code']))
  layers.add(undefined, tool('nativeOnly', ['native']))
  return { layers, events, transport }
}

const names = (tools: readonly { readonly definition: { readonly name: string } }[]) => tools.map((t) => t.definition.name)

describe('ToolView: one answer to "what does this agent see, and may it call X natively or from code"', () => {
  it('native: every visible tool natively except code-only ones, no run_code', () => {
    const { layers } = setup('native')
    const view = layers.view(undefined)
    expect(view.mode).toBe('native')
    expect(view.presentsRunCode).toBe(false)
    expect(names(view.tools)).toEqual(['both', 'codeOnly', 'nativeOnly'])
    expect(names(view.native)).toEqual(['both', 'nativeOnly'])
    expect(names(view.code)).toEqual(['both', 'codeOnly'])
    expect(view.resolve(RUN_CODE_TOOL_NAME)).toBeUndefined()
    expect(view.schemas.map((s) => s.name)).toEqual(['both', 'codeOnly', 'nativeOnly'])
    expect(view.wireTools.map((s) => s.name)).toEqual(['both', 'nativeOnly'])
    expect(view.routeBack('both', 'native')).toBeUndefined()
  })

  it('code: nothing is native, run_code is presented, a direct call collapses to the route-back hint', () => {
    const { layers, transport } = setup('code')
    const view = layers.view(undefined)
    expect(view.presentsRunCode).toBe(true)
    expect(view.native).toEqual([])
    expect(names(view.code)).toEqual(['both', 'codeOnly'])
    expect(view.resolve(RUN_CODE_TOOL_NAME)).toBe(transport)
    expect(view.wireTools.map((s) => s.name)).toEqual([RUN_CODE_TOOL_NAME])
    expect(view.schemas.map((s) => s.name)).toEqual(['both', 'codeOnly', 'nativeOnly', RUN_CODE_TOOL_NAME])
    expect(view.routeBack('both', 'native')).toBe(routeBackMessage('both'))
    expect(view.routeBack('missing', 'native')).toBe('unknown tool "missing"')
    // run_code itself, and every call from a program, pass the collapse.
    expect(view.routeBack(RUN_CODE_TOOL_NAME, 'native')).toBeUndefined()
    expect(view.routeBack('both', 'code')).toBeUndefined()
  })

  it('both: native tools and run_code on the wire, no collapse', () => {
    const { layers } = setup('both')
    const view = layers.view(undefined)
    expect(names(view.native)).toEqual(['both', 'nativeOnly'])
    expect(view.wireTools.map((s) => s.name)).toEqual(['both', 'nativeOnly', RUN_CODE_TOOL_NAME])
    expect(view.routeBack('both', 'native')).toBeUndefined()
  })

  it('callers: a refusal names the hint for each caller; binding names keep native-only tools (for the hint)', () => {
    const { layers } = setup('both')
    const view = layers.view(undefined)
    expect(view.callerRefusal(view.resolve('codeOnly')!, 'native')).toBe(codeOnlyToolMessage('codeOnly'))
    expect(view.callerRefusal(view.resolve('nativeOnly')!, 'code')).toBe(nativeOnlyToolMessage('nativeOnly'))
    expect(view.callerRefusal(view.resolve('both')!, 'native')).toBeUndefined()
    expect(view.callerRefusal(view.resolve('both')!, 'code')).toBeUndefined()
    expect(view.bindingNames).toEqual(['both', 'codeOnly', 'nativeOnly'])
  })

  it('an agent layer over the global layer: its own tool shadows, masks hide globals, presentAs is its own', () => {
    const { layers } = setup('native')
    layers.openAgent('a')
    const local = tool('both')
    layers.add('a', local)
    layers.add('a', tool('mine'))
    layers.restrict('a', { deny: ['nativeOnly'] })
    layers.presentAs('a', 'code')
    const view = layers.view('a')
    expect(view.mode).toBe('code')
    expect(names(view.tools)).toEqual(['codeOnly', 'both', 'mine'])
    expect(view.resolve('both')).toBe(local)
    expect(view.resolve('nativeOnly')).toBeUndefined()
    expect(view.bindingNames).toEqual(['both', 'codeOnly', 'mine'])
    // The global view is untouched by the agent's layer.
    const global = layers.view(undefined)
    expect(global.mode).toBe('native')
    expect(global.resolve('both')).not.toBe(local)
    expect(names(global.tools)).toEqual(['both', 'codeOnly', 'nativeOnly'])
  })

  it('restrict({ allow }) keeps only the named globals; the agent keeps its own tools', () => {
    const { layers } = setup('native')
    layers.openAgent('a')
    layers.add('a', tool('mine'))
    layers.restrict('a', { allow: ['codeOnly'] })
    expect(names(layers.view('a').tools)).toEqual(['codeOnly', 'mine'])
  })

  it('is immutable, cached while nothing changes, and rebuilt after every kind of change', () => {
    const { layers } = setup('native')
    layers.openAgent('a')
    const first = layers.view('a')
    expect(Object.isFrozen(first)).toBe(true)
    expect(Object.isFrozen(first.tools)).toBe(true)
    expect(Object.isFrozen(first.schemas)).toBe(true)
    expect(layers.view('a')).toBe(first)

    const undoAdd = layers.add(undefined, tool('late'))
    const afterGlobalAdd = layers.view('a')
    expect(afterGlobalAdd).not.toBe(first)
    expect(afterGlobalAdd.resolve('late')).toBeDefined()
    undoAdd()
    expect(layers.view('a').resolve('late')).toBeUndefined()

    const undoMask = layers.restrict('a', { deny: ['both'] })
    expect(layers.view('a').resolve('both')).toBeUndefined()
    undoMask()
    expect(layers.view('a').resolve('both')).toBeDefined()

    const undoMode = layers.presentAs('a', 'both')
    expect(layers.view('a').presentsRunCode).toBe(true)
    undoMode()
    expect(layers.view('a').presentsRunCode).toBe(false)
  })

  it("a closed agent's layer no longer shows: its view falls back to the global one", () => {
    const { layers } = setup('native')
    layers.openAgent('a')
    layers.add('a', tool('mine'))
    layers.presentAs('a', 'code')
    expect(layers.view('a').resolve('mine')).toBeDefined()
    layers.closeAgent('a')
    expect(layers.view('a')).toBe(layers.view(undefined))
    expect(layers.view('a').resolve('mine')).toBeUndefined()
    expect(layers.view('a').mode).toBe('native')
  })

  it('an agent without a layer shares the global view (made-up names add no cache entry)', () => {
    const { layers } = setup('both')
    const global = layers.view(undefined)
    for (let i = 0; i < 1000; i++) expect(layers.view(`nobody-${i}`)).toBe(global)
  })

  it('the catalog answers agree with the view: schemas, visibleTools, bindingNames, presentation', () => {
    const { layers } = setup('code')
    layers.openAgent('a')
    layers.restrict('a', { deny: ['codeOnly'] })
    const view = layers.view('a')
    expect(layers.schemas('a')).toEqual([...view.schemas])
    expect(layers.visibleTools('a')).toEqual([...view.tools])
    expect(layers.bindingNames('a')).toBe(view.bindingNames)
    expect(layers.presentation('a')).toBe('code')
    expect(layers.resolve(RUN_CODE_TOOL_NAME, 'a')).toBe(view.resolve(RUN_CODE_TOOL_NAME))
  })

  it('the public face: frozen schema lists, get by name, canCall per caller', () => {
    const { layers, transport } = setup('both')
    const view = layers.view(undefined)
    const face = view.public
    expect(face).toBe(view.public)
    expect(Object.isFrozen(face)).toBe(true)
    expect(face.mode).toBe('both')
    expect(face.presentsRunCode).toBe(true)
    expect(face.tools.map((s) => s.name)).toEqual(['both', 'codeOnly', 'nativeOnly'])
    expect(face.native.map((s) => s.name)).toEqual(['both', 'nativeOnly'])
    expect(face.code.map((s) => s.name)).toEqual(['both', 'codeOnly'])
    expect(face.tools[1]).toBe(layers.schemaOf(view.tools[1]!))
    for (const list of [face.tools, face.native, face.code]) expect(Object.isFrozen(list)).toBe(true)
    expect(face.schemas).toBe(view.schemas)
    expect(face.wireTools).toBe(view.wireTools)
    expect(face.get('codeOnly')).toBe(view.resolve('codeOnly')!.definition)
    expect(face.get(RUN_CODE_TOOL_NAME)).toBe(transport.definition)
    expect(face.get('missing')).toBeUndefined()
    expect(face.get(7 as never)).toBeUndefined()
    const answers = (name: string) => [face.canCall(name, 'native'), face.canCall(name, 'code')]
    expect(answers('both')).toEqual([true, true])
    expect(answers('codeOnly')).toEqual([false, true])
    expect(answers('nativeOnly')).toEqual([true, false])
    // run_code is presented, but a program cannot call the transport.
    expect(answers(RUN_CODE_TOOL_NAME)).toEqual([true, false])
    expect(answers('missing')).toEqual([false, false])
    expect(face.canCall(7 as never, 'native')).toBe(false)
    expect(face.canCall('both', 'other' as never)).toBe(false)
  })

  it('the public face under native: no run_code, direct calls per callers; under code: nothing direct', () => {
    const native = setup('native').layers.view(undefined).public
    expect(native.presentsRunCode).toBe(false)
    expect(native.canCall(RUN_CODE_TOOL_NAME, 'native')).toBe(false)
    expect(native.get(RUN_CODE_TOOL_NAME)).toBeUndefined()
    expect(native.canCall('nativeOnly', 'native')).toBe(true)
    const code = setup('code').layers.view(undefined).public
    expect(code.native).toEqual([])
    expect(code.canCall('both', 'native')).toBe(false)
    expect(code.canCall('both', 'code')).toBe(true)
    expect(code.canCall(RUN_CODE_TOOL_NAME, 'native')).toBe(true)
  })

  it('the messages name the tool and the rule', () => {
    expect(codeOnlyToolMessage('t')).toBe("`t` is callable only from inside a `run_code` program (its callers are ['code'])")
    expect(nativeOnlyToolMessage('t')).toBe("`t` cannot be called from a program: it is offered to the model as a native tool only (its callers are ['native'])")
    expect(routeBackMessage('t')).toBe('only `run_code` is callable directly — call `t` from inside a `run_code` program instead')
  })

  it('offeredNatively: unrestricted callers or ones admitting native', () => {
    expect(offeredNatively({})).toBe(true)
    expect(offeredNatively({ callers: ['native', 'code'] })).toBe(true)
    expect(offeredNatively({ callers: ['native'] })).toBe(true)
    expect(offeredNatively({ callers: ['code'] })).toBe(false)
  })
})
