/**
 * Prompt assembly through the public API: sections and their order, the tool
 * contribution of each mode, toolOrder, the assemble waterfall, and every refusal with
 * its code and message.
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { CODE_ONLY_SECTION, CODE_ONLY_TEXT, SDK_SECTION } from '../../../src/registry/assembly.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { PromptAssembly, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { thrownToolError } from '../../support/refusal.js'
import { routeBackMessage } from '../../../src/registry/pipeline.js'

const tool = (name: string) =>
  defineTool({ name, description: `${name} tool`, parameters: {}, output: { schema: { type: 'null' }, render: () => [] }, execute: () => null })

const failure = thrownToolError

const make = (options: ToolRuntimeOptions = {}) => {
  const runtime = createToolRuntime(options)
  runtime.register(tool('b'))
  runtime.register(tool('a'))
  return runtime
}

describe('sections', () => {
  it('sorts by order, ties in registration order; agent sections only in that agent', () => {
    const runtime = make()
    runtime.section({ id: 'late', order: 10, text: 'L' })
    runtime.section({ id: 'early', order: -1, text: 'E' })
    runtime.section({ id: 'tie', order: 10, text: 'T' })
    runtime.agent('x').section({ id: 'mine', order: 0, text: 'M' })
    expect(runtime.assemble().sections.map((s) => s.id)).toEqual(['early', 'late', 'tie'])
    expect(runtime.assemble('x').sections.map((s) => s.id)).toEqual(['early', 'mine', 'late', 'tie'])
    expect(runtime.assemble('y').sections.map((s) => s.id)).toEqual(['early', 'late', 'tie'])
    const section = runtime.assemble().sections[0]!
    expect(section).toEqual({ id: 'early', order: -1, text: 'E' })
    expect(Object.isFrozen(section)).toBe(true)
  })

  it('removing a section takes it out of later assemblies', () => {
    const runtime = make()
    const remove = runtime.section({ id: 's', order: 1, text: 't' })
    remove()
    expect(runtime.assemble().sections).toEqual([])
  })

  it('refuses malformed and reserved sections', () => {
    const runtime = make()
    const refuse = (section: unknown) => failure(() => runtime.section(section as never))
    expect(refuse(null)).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'section(section) needs { id, order, text }' })
    expect(refuse('s')).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'section(section) needs { id, order, text }' })
    expect(refuse({ id: '', order: 1, text: '' })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'a prompt section needs a non-empty string id' })
    expect(refuse({ id: 1, order: 1, text: '' })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'a prompt section needs a non-empty string id' })
    expect(refuse({ id: 'tools:sdk', order: 1, text: '' })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'the section id "tools:sdk" is reserved for the registry' })
    expect(refuse({ id: 'tools:code-only', order: 1, text: '' })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'the section id "tools:code-only" is reserved for the registry' })
    expect(refuse({ id: 's', order: Number.NaN, text: '' })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'section "s" needs a finite order' })
    expect(refuse({ id: 's', order: '1', text: '' })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'section "s" needs a finite order' })
    expect(refuse({ id: 's', order: 1, text: 5 })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'section "s" needs string text' })
  })
})

describe('the tool contribution of each mode', () => {
  it('native: every visible schema, no registry sections', () => {
    const assembly = make().assemble()
    expect(assembly.mode).toBe('native')
    expect(assembly.tools.map((t) => t.name)).toEqual(['b', 'a'])
    expect(assembly.sections).toEqual([])
    expect(Object.isFrozen(assembly) && Object.isFrozen(assembly.tools) && Object.isFrozen(assembly.sections)).toBe(true)
  })

  it('code: only run_code, the SDK at 150 and the rule at 90', () => {
    const assembly = make({ mode: 'code', codeRuntime: createInProcessRuntime() }).assemble()
    expect(assembly.tools.map((t) => t.name)).toEqual(['run_code'])
    expect(assembly.sections.map((s) => [s.id, s.order])).toEqual([
      ['tools:code-only', 90],
      ['tools:sdk', 150],
    ])
    expect(assembly.sections[0]!.text).toBe(CODE_ONLY_TEXT)
    expect(CODE_ONLY_TEXT).toBe(
      '## Calling tools\n\nOnly `run_code` may be called directly. Every other tool listed in the SDK below is callable only from inside a `run_code` program, as `await tools.name(args)`; a direct call to any of them fails.',
    )
    expect(assembly.sections[1]!.text).toContain('a tool')
    expect(SDK_SECTION).toEqual({ id: 'tools:sdk', order: 150 })
    expect(CODE_ONLY_SECTION).toEqual({ id: 'tools:code-only', order: 90 })
  })

  it('both: every visible schema then run_code, and no code-only rule', () => {
    const assembly = make({ mode: 'both', codeRuntime: createInProcessRuntime() }).assemble()
    expect(assembly.tools.map((t) => t.name)).toEqual(['b', 'a', 'run_code'])
    expect(assembly.sections.map((s) => s.id)).toEqual(['tools:sdk'])
  })

  it('under code presentation a direct call is routed back to run_code, and an unknown name says so', async () => {
    const runtime = make({ mode: 'code', codeRuntime: createInProcessRuntime() })
    const call = (name: string) => runtime.execute({ callId: name, name, arguments: {}, signal: new AbortController().signal })
    const routed = await call('a')
    expect(routed.isError && routed.error).toEqual({ message: routeBackMessage('a'), info: { name: 'ToolError', code: 'UNKNOWN_TOOL' } })
    expect(routeBackMessage('a')).toBe('only `run_code` is callable directly — call `a` from inside a `run_code` program instead')
    const unknown = await call('nope')
    expect(unknown.isError && unknown.error).toEqual({ message: 'unknown tool "nope"', info: { name: 'ToolError', code: 'UNKNOWN_TOOL' } })
  })

  it('registry sections come after a user section of the same order', () => {
    const runtime = make({ mode: 'code', codeRuntime: createInProcessRuntime() })
    runtime.section({ id: 'same', order: 150, text: 'x' })
    runtime.section({ id: 'rule-tie', order: 90, text: 'y' })
    expect(runtime.assemble().sections.map((s) => s.id)).toEqual(['rule-tie', 'tools:code-only', 'same', 'tools:sdk'])
  })

  it('needs a code runtime with an SDK renderer, and reports a failing renderer', () => {
    expect(failure(() => make({ mode: 'code' }).assemble())).toEqual({ code: 'ASSEMBLY_FAILED', message: "presentation 'code' needs options.codeRuntime, and none is configured" })
    expect(failure(() => make({ mode: 'both' }).assemble())).toEqual({ code: 'ASSEMBLY_FAILED', message: "presentation 'both' needs options.codeRuntime, and none is configured" })
    const cobol = Object.assign(Object.create(createInProcessRuntime()) as object, { language: 'cobol' })
    expect(failure(() => make({ mode: 'code', codeRuntime: cobol as never }).assemble())).toEqual({ code: 'ASSEMBLY_FAILED', message: `presentation 'code': no Code Mode SDK renderer for language "cobol"` })
  })
})

describe('toolOrder', () => {
  it('puts the named tools first, in that order, the rest after in their order', () => {
    const runtime = createToolRuntime({ toolOrder: ['c', 'a'] })
    for (const name of ['a', 'b', 'c', 'd']) runtime.register(tool(name))
    expect(runtime.assemble().tools.map((t) => t.name)).toEqual(['c', 'a', 'b', 'd'])
    expect(createToolRuntime({ toolOrder: [] }).assemble().tools).toEqual([])
  })

  it('can place run_code, and refuses a name the mode does not contribute', () => {
    const runtime = make({ mode: 'both', codeRuntime: createInProcessRuntime(), toolOrder: ['run_code'] })
    expect(runtime.assemble().tools.map((t) => t.name)).toEqual(['run_code', 'b', 'a'])
    const code = make({ mode: 'code', codeRuntime: createInProcessRuntime(), toolOrder: ['a'] })
    expect(failure(() => code.assemble())).toEqual({ code: 'ASSEMBLY_FAILED', message: `options.toolOrder names "a", which presentation 'code' does not contribute here` })
  })
})

describe('the assemble waterfall', () => {
  it('each listener receives the previous result and the agent; the last result is the assembly', () => {
    const runtime = make()
    const seen: unknown[] = []
    runtime.on('system-prompt/assemble', (assembly, context) => {
      seen.push(['first', assembly.tools.length, context])
      return { ...assembly, sections: [...assembly.sections, { id: 'added', order: 1, text: 'x' }] }
    })
    runtime.on('system-prompt/assemble', (assembly, context) => {
      seen.push(['second', assembly.sections.length, context])
      return { ...assembly, tools: assembly.tools.slice(0, 1), mode: 'both' }
    })
    const assembly = runtime.assemble('agent-1')
    expect(seen).toEqual([
      ['first', 2, { agent: 'agent-1' }],
      ['second', 1, { agent: 'agent-1' }],
    ])
    expect(assembly.mode).toBe('both')
    expect(assembly.tools.map((t) => t.name)).toEqual(['b'])
    expect(assembly.sections).toEqual([{ id: 'added', order: 1, text: 'x' }])
    expect(Object.isFrozen(assembly) && Object.isFrozen(assembly.sections) && Object.isFrozen(assembly.sections[0])).toBe(true)
    runtime.assemble()
    expect(seen.at(-1)).toEqual(['second', 1, {}])
  })

  it('freezes a listener’s unfrozen tool to its three fields, keeps a frozen one as is', () => {
    const runtime = make()
    const frozen = Object.freeze({ name: 'f', description: 'd', parameters: { type: 'object' as const } })
    runtime.on('system-prompt/assemble', (assembly) => ({ ...assembly, tools: [{ name: 'u', description: 'd', parameters: { type: 'object' }, extra: 1 } as never, frozen] }))
    const tools = runtime.assemble().tools
    expect(tools[0]).toEqual({ name: 'u', description: 'd', parameters: { type: 'object' } })
    expect(Object.isFrozen(tools[0])).toBe(true)
    expect(tools[1]).toBe(frozen)
  })

  it('refuses what a listener returns when it is not an assembly, and reports a listener’s throw', () => {
    const attempt = (result: unknown) => {
      const runtime = make()
      runtime.on('system-prompt/assemble', () => result as PromptAssembly)
      return failure(() => runtime.assemble())
    }
    const base = { sections: [], tools: [], mode: 'native' }
    expect(attempt(undefined)).toEqual({ code: 'ASSEMBLY_FAILED', message: 'a system-prompt/assemble listener returned no assembly' })
    expect(attempt('x')).toEqual({ code: 'ASSEMBLY_FAILED', message: 'a system-prompt/assemble listener returned no assembly' })
    expect(attempt({ ...base, sections: {} })).toEqual({ code: 'ASSEMBLY_FAILED', message: 'a system-prompt/assemble listener returned an assembly without sections and tools arrays' })
    expect(attempt({ ...base, tools: null })).toEqual({ code: 'ASSEMBLY_FAILED', message: 'a system-prompt/assemble listener returned an assembly without sections and tools arrays' })
    expect(attempt({ ...base, mode: 'hybrid' })).toEqual({ code: 'ASSEMBLY_FAILED', message: 'a system-prompt/assemble listener returned an assembly with an invalid mode' })
    for (const mode of ['native', 'code', 'both']) expect(attempt({ ...base, mode })).toBeUndefined()
    for (const section of [null, { id: 1, order: 1, text: '' }, { id: 'a', order: '1', text: '' }, { id: 'a', order: 1, text: null }]) {
      expect(attempt({ ...base, sections: [{ id: 'ok', order: 1, text: '' }, section] })).toEqual({ code: 'ASSEMBLY_FAILED', message: 'a system-prompt/assemble listener returned a malformed section at index 1' })
    }
    for (const t of [null, { name: 1, description: '', parameters: {} }, { name: 'a', description: 2, parameters: {} }, { name: 'a', description: '', parameters: null }, { name: 'a', description: '', parameters: 'x' }]) {
      expect(attempt({ ...base, tools: [t] })).toEqual({ code: 'ASSEMBLY_FAILED', message: 'a system-prompt/assemble listener returned a malformed tool at index 0' })
    }
    const runtime = make()
    runtime.on('system-prompt/assemble', () => {
      throw new Error('listener bug')
    })
    let caught: unknown
    try {
      runtime.assemble()
    } catch (error) {
      caught = error
    }
    expect((caught as ToolError).code).toBe('ASSEMBLY_FAILED')
    expect((caught as Error).message).toBe('a system-prompt/assemble listener failed: listener bug')
    expect((caught as Error).cause).toBeInstanceOf(Error)
  })
})
