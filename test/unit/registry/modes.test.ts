import { describe, expect, it } from 'vitest'
import type { CodeBindingFunction, CodeRunRequest, CodeRunResult, CodeRuntime } from '../../../src/code-runtime/contract.js'
import { CODE_ONLY_SECTION, SDK_SECTION, createToolRuntime, routeBackMessage } from '../../../src/registry/index.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import { call, echoTool } from './helpers.js'
import type { ToolExecutionResult } from './types.js'
import { ToolError } from '../../../src/errors.js'
import { CODE_ONLY_TEXT } from '../../../src/registry/assembly.js'
import type { PromptAssembly, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { thrownToolError } from '../../support/refusal.js'

const codeOf = (r: ToolExecutionResult) => (r.isError ? r.error.info?.code : 'OK')
const text = (r: ToolExecutionResult) => r.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

type Program = (tools: Record<string, CodeBindingFunction>, signal: AbortSignal) => Promise<unknown>

/**
 * An in-process CodeRuntime for registry tests: the "program" text names a scripted
 * function. It exercises the real run_code tool and bridge against the real registry;
 * the sandbox itself is covered by the runtime contract suites.
 */
function scriptedRuntime(programs: Record<string, Program>, language = 'typescript'): CodeRuntime {
  return {
    language,
    isolation: 'in-process-test',
    capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
    async run(request: CodeRunRequest): Promise<CodeRunResult> {
      const program = programs[request.program]
      if (program === undefined) return { logs: [], error: { kind: 'exception', message: `no such program ${request.program}` } }
      const tools = request.bindings.find((b) => b.global === 'tools')?.functions ?? {}
      const signal = request.signal ?? new AbortController().signal
      try {
        const value = await program(tools, signal)
        return { logs: [], ...(value === undefined ? {} : { value }) }
      } catch (error) {
        return { logs: [], error: { kind: 'exception', message: String((error as Error).message) } }
      }
    },
    dispose: async () => {},
  }
}

const opts = { signal: new AbortController().signal }

describe('presentation modes: wire tools and sections', () => {
  const build = (mode: 'native' | 'code' | 'both', language = 'typescript') => {
    const runtime = createToolRuntime({ mode, codeRuntime: scriptedRuntime({}, language) })
    runtime.register(echoTool('zeta'))
    runtime.register(echoTool('alpha'))
    runtime.section({ id: 'intro', order: 10, text: 'Hello' })
    runtime.section({ id: 'guide', order: 120, text: 'Guidance' })
    return runtime
  }

  it('native: every visible schema, no Code Mode sections', () => {
    const assembly = build('native').assemble()
    expect(assembly.mode).toBe('native')
    expect(assembly.tools.map((t) => t.name)).toEqual(['zeta', 'alpha'])
    expect(assembly.sections.map((s) => s.id)).toEqual(['intro', 'guide'])
    // The same rule on a second tool set (two tools, no sections of its own): exactly.
    {
      const assembly = make().assemble()
      expect(assembly.mode).toBe('native')
      expect(assembly.tools.map((t) => t.name)).toEqual(['b', 'a'])
      expect(assembly.sections).toEqual([])
      expect(Object.isFrozen(assembly) && Object.isFrozen(assembly.tools) && Object.isFrozen(assembly.sections)).toBe(true)
    }
  })

  it('code: exactly [run_code]; tools:code-only before the guidance band, tools:sdk at 150', () => {
    const assembly = build('code').assemble()
    expect(assembly.tools.map((t) => t.name)).toEqual(['run_code'])
    expect(assembly.sections.map((s) => [s.id, s.order])).toEqual([
      ['intro', 10],
      [CODE_ONLY_SECTION.id, 90],
      ['guide', 120],
      [SDK_SECTION.id, 150],
    ])
    const sdk = assembly.sections.find((s) => s.id === 'tools:sdk')!.text
    expect(sdk).toContain('alpha')
    expect(sdk).toContain('zeta')
    expect(sdk).not.toMatch(/["']?run_code["']?\s*:/)
    expect(assembly.sections.find((s) => s.id === 'tools:code-only')!.text).toMatch(/Only `run_code` may be called directly/)
    expect(Object.isFrozen(assembly)).toBe(true)
    // The same rule on a second tool set (two tools, no sections of its own): exactly.
    {
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
    }
  })

  it('both: all tools plus run_code; no code-only section (the rule does not hold, and no section is empty)', () => {
    const assembly = build('both').assemble()
    expect(assembly.tools.map((t) => t.name)).toEqual(['zeta', 'alpha', 'run_code'])
    expect(assembly.sections.map((s) => s.id)).not.toContain('tools:code-only')
    expect(assembly.sections.filter((s) => s.text === '')).toEqual([])
    expect(assembly.sections.some((s) => s.id === 'tools:sdk')).toBe(true)
    // The same rule on a second tool set (two tools, no sections of its own): exactly.
    {
      const assembly = make({ mode: 'both', codeRuntime: createInProcessRuntime() }).assemble()
      expect(assembly.tools.map((t) => t.name)).toEqual(['b', 'a', 'run_code'])
      expect(assembly.sections.map((s) => s.id)).toEqual(['tools:sdk'])
    }
  })

  it('the SDK is byte-identical for an unchanged tool set and follows the runtime language', () => {
    const a = build('code').assemble().sections.find((s) => s.id === 'tools:sdk')!.text
    const b = build('code').assemble().sections.find((s) => s.id === 'tools:sdk')!.text
    expect(a).toBe(b)
    const py = build('code', 'python').assemble().sections.find((s) => s.id === 'tools:sdk')!.text
    expect(py).not.toBe(a)
  })

  it('a code mode without a code runtime, or with an unrendered language, fails assembly loudly', () => {
    expect(() => createToolRuntime({ mode: 'code' })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => build('both', 'cobol').assemble()).toThrow(expect.objectContaining({ code: 'ASSEMBLY_FAILED' }))
    // native assembly never needs one
    expect(createToolRuntime().assemble().tools).toEqual([])
  })

  it('presentAs selects one agent’s presentation; agent sections and restrictions shape its SDK', () => {
    const runtime = build('native')
    const agent = runtime.agent('coder')
    agent.presentAs('code')
    agent.restrict({ deny: ['zeta'] })
    agent.section({ id: 'agent-note', order: 5, text: 'agent only' })
    const assembly = agent.assemble()
    expect(assembly.mode).toBe('code')
    expect(assembly.tools.map((t) => t.name)).toEqual(['run_code'])
    expect(assembly.sections[0]!.id).toBe('agent-note')
    const sdk = assembly.sections.find((s) => s.id === 'tools:sdk')!.text
    expect(sdk).toContain('alpha')
    expect(sdk).not.toContain('zeta')
    expect(runtime.assemble().sections.map((s) => s.id)).toEqual(['intro', 'guide'])
  })

  it('toolOrder orders wire tools; naming a tool the mode does not contribute rejects assembly', () => {
    const ordered = createToolRuntime({ mode: 'both', codeRuntime: scriptedRuntime({}), toolOrder: ['run_code', 'alpha'] })
    ordered.register(echoTool('zeta'))
    ordered.register(echoTool('alpha'))
    expect(ordered.assemble().tools.map((t) => t.name)).toEqual(['run_code', 'alpha', 'zeta'])
    const code = createToolRuntime({ mode: 'code', codeRuntime: scriptedRuntime({}), toolOrder: ['alpha'] })
    code.register(echoTool('alpha'))
    expect(() => code.assemble()).toThrow(expect.objectContaining({ code: 'ASSEMBLY_FAILED' }))
    const native = createToolRuntime({ toolOrder: ['run_code'] })
    expect(() => native.assemble()).toThrow(/run_code/)
  })

  it('the system-prompt/assemble waterfall may replace the assembly; a throwing listener fails assembly', () => {
    const runtime = build('code')
    runtime.on('system-prompt/assemble', (a) => ({ ...a, sections: [...a.sections, { id: 'extra', order: 999, text: 'x' }] }))
    runtime.agent('x').on('system-prompt/assemble', (a, ctx) => ({ ...a, sections: [{ id: `only-${ctx.agent}`, order: 0, text: '' }] }))
    expect(runtime.assemble().sections.at(-1)!.id).toBe('extra')
    expect(runtime.agent('x').assemble().sections.map((s) => s.id)).toEqual(['only-x'])
    runtime.on('system-prompt/assemble', () => {
      throw new Error('broken')
    })
    expect(() => runtime.assemble()).toThrow(expect.objectContaining({ code: 'ASSEMBLY_FAILED' }))
    const bad = build('native')
    bad.on('system-prompt/assemble', () => null as never)
    expect(() => bad.assemble()).toThrow(expect.objectContaining({ code: 'ASSEMBLY_FAILED' }))
  })

  it('reserved section ids and malformed sections are rejected', () => {
    const runtime = createToolRuntime()
    expect(() => runtime.section({ id: 'tools:sdk', order: 1, text: '' })).toThrow(/reserved/)
    expect(() => runtime.section({ id: 'x', order: Number.NaN, text: '' })).toThrow(/order/)
  })
})

describe('run_code: an intrinsic of the runtime', () => {
  it('is visible (get/schemas/execute) only under code or both', async () => {
    const runtime = createToolRuntime({ codeRuntime: scriptedRuntime({ one: async () => 1 }) })
    expect(runtime.get('run_code')).toBeUndefined()
    expect(codeOf(await runtime.execute(call('run_code', { code: 'one', description: 'd' })))).toBe('UNKNOWN_TOOL')
    const agent = runtime.agent('a')
    agent.presentAs('both')
    expect(agent.get('run_code')).toBeDefined()
    expect(agent.schemas().map((s) => s.name)).toContain('run_code')
    const result = await agent.execute(call('run_code', { code: 'one', description: 'd' }))
    expect(result).toMatchObject({ isError: false, value: { logs: [], result: 1 } })
  })

  it('code-only collapse: a direct call of another tool is UNKNOWN_TOOL with the route-back message, before any policy', async () => {
    const policy: string[] = []
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: scriptedRuntime({}), approval: () => (policy.push('approval'), true) })
    runtime.register(echoTool('alpha'))
    runtime.on('tools/pre-execute', () => (policy.push('gate'), { kind: 'ask' }))
    runtime.guard(() => void policy.push('guard'))
    const result = await runtime.execute(call('alpha', { text: 'x' }))
    expect(codeOf(result)).toBe('UNKNOWN_TOOL')
    expect(text(result)).toBe(`Error: ${routeBackMessage('alpha')}`)
    expect(text(result)).toBe('Error: only `run_code` is callable directly — call `alpha` from inside a `run_code` program instead')
    expect(policy).toEqual([])
    // Under both, no collapse.
    const both = createToolRuntime({ mode: 'both', codeRuntime: scriptedRuntime({}) })
    both.register(echoTool('alpha'))
    expect(codeOf(await both.execute(call('alpha', { text: 'x' })))).toBe('OK')
  })

  it('sub-dispatches from a program carry the outer token and are exempt; they run the full pipeline and log start/settle', async () => {
    const sessionLog = createMemorySessionLog()
    const programs: Record<string, Program> = {
      chain: async (tools) => {
        const first = await tools.alpha!({ text: 'one' }, opts)
        const both = await Promise.all([tools.alpha!({ text: 'two' }, opts), tools.alpha!({ text: 'three' }, opts)])
        return [first, ...both]
      },
    }
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: scriptedRuntime(programs), sessionLog })
    runtime.register({ ...echoTool('alpha'), isConcurrencySafe: () => true } as never)
    const parents: (symbol | undefined)[] = []
    runtime.on('tools/pre-execute', (d, e) => (e.name === 'alpha' && parents.push(e.parent), d))
    let outerToken: symbol | undefined
    runtime.on('tools/result', (e) => void (e.name === 'run_code' && (outerToken = e.token)))
    const result = await runtime.execute(call('run_code', { code: 'chain', description: 'three echoes' }, { callId: 'outer' }))
    expect(result).toMatchObject({ isError: false, value: { result: ['one', 'two', 'three'] } })
    expect(parents).toHaveLength(3)
    expect(parents.every((p) => p === outerToken)).toBe(true)
    const types = sessionLog.events.map((e) => `${e.type}:${e.subCallId}`)
    expect(types.filter((t) => t.startsWith('tool/code-dispatch-start'))).toEqual([
      'tool/code-dispatch-start:outer:code:1',
      'tool/code-dispatch-start:outer:code:2',
      'tool/code-dispatch-start:outer:code:3',
    ])
    expect(types.filter((t) => t.startsWith('tool/code-dispatch:'))).toHaveLength(3)
  })

  it('bindingNames are the visible tools except run_code, sorted; denied sub-calls reject inside the program', async () => {
    let names: string[] = []
    const programs: Record<string, Program> = {
      names: async (tools) => {
        names = Object.keys(tools)
        try {
          await tools.secret!({}, opts)
          return 'no error'
        } catch (error) {
          return `${(error as Error).name}: ${(error as Error).message}`
        }
      },
    }
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: scriptedRuntime(programs) })
    runtime.register(echoTool('zeta'))
    runtime.register(echoTool('secret'))
    runtime.register(echoTool('alpha'))
    runtime.guard((e) => (e.name === 'secret' ? 'secret is off limits' : undefined))
    const result = await runtime.execute(call('run_code', { code: 'names', description: 'd' }))
    expect(names).toEqual(['alpha', 'secret', 'zeta'])
    expect(result).toMatchObject({ value: { result: 'ToolCallError: secret was denied by a guard: secret is off limits' } })
  })

  it('the tools/code-dispatch-log waterfall may replace a logged event; a throwing listener keeps the previous one', async () => {
    const sessionLog = createMemorySessionLog()
    const programs: Record<string, Program> = { one: async (tools) => tools.alpha!({ text: 'big' }, opts) }
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: scriptedRuntime(programs), sessionLog })
    runtime.register(echoTool('alpha'))
    runtime.on('tools/code-dispatch-log', (e) => ({ ...e, content: [{ type: 'text', text: 'spilled' }] }))
    runtime.on('tools/code-dispatch-log', () => {
      throw new Error('broken spill')
    })
    await runtime.execute(call('run_code', { code: 'one', description: 'd' }))
    const settled = sessionLog.events.find((e) => e.type === 'tool/code-dispatch')!
    expect(settled.type === 'tool/code-dispatch' && settled.content).toEqual([{ type: 'text', text: 'spilled' }])
  })

  it('a failed run surfaces as CODE_RUN_FAILED', async () => {
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: scriptedRuntime({}) })
    const result = await runtime.execute(call('run_code', { code: 'missing', description: 'd' }))
    expect(codeOf(result)).toBe('CODE_RUN_FAILED')
    expect(text(result)).toMatch(/^Error: code run failed \(exception\)/)
  })
})

/*
 * Prompt assembly through the public API: sections and their order, the tool
 * contribution of each mode, toolOrder, the assemble waterfall, and every refusal with
 * its code and message.
 */
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
    const fix = "pass createToolRuntime({ codeRuntime }) (e.g. createSandboxRuntime() from 'toolyard/node'), or present 'native' (options.mode, or the agent's presentAs)"
    // Refused when the runtime is created (before: accepted, and ASSEMBLY_FAILED at the first assemble()).
    expect(failure(() => make({ mode: 'code' }))).toEqual({ code: 'INVALID_OPTIONS', message: "options.mode 'code' presents run_code and needs options.codeRuntime (e.g. createSandboxRuntime() from 'toolyard/node'); without one, use mode 'native' (runtime.preflight() needs no code runtime)" })
    expect(failure(() => make({ mode: 'both' }))?.code).toBe('INVALID_OPTIONS')
    // An agent presenting code on a runtime without one still fails at assembly, saying what to do.
    const native = make({})
    native.agent('coder').presentAs('code')
    expect(failure(() => native.assemble('coder'))).toEqual({ code: 'ASSEMBLY_FAILED', message: `presentation 'code' needs options.codeRuntime, and none is configured: ${fix}` })
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
