/**
 * Prompt assembly (`assembly.ts`) at its edges: a failing SDK renderer (a ToolError of
 * its own kind passes through, anything else is wrapped with its cause), the context an
 * assemble listener receives for the global layer, what a listener may return (a function
 * is never a section or a tool), and the tie order of sections across an agent and the
 * global layer.
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { assemblePrompt } from '../../../src/registry/assembly.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { PromptSections } from '../../../src/registry/prompt-sections.js'
import type { PromptAssembly } from '../../../src/runtime-types.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import { echoTool, idleCodeRuntime } from './helpers.js'

/** Assembly over hand-built parts under `code`, with `sdkText` as given. */
function assembleWith(sdkText: (agent: string | undefined, language: string) => string): PromptAssembly {
  const transport = detachToolDefinition(echoTool('run_code'))
  const layers = new ToolLayers({ defaultMode: 'code', transport: () => transport, onChange: () => {} })
  layers.add(undefined, detachToolDefinition(echoTool('echo')))
  const options = validateRuntimeOptions({ mode: 'code', codeRuntime: idleCodeRuntime() })
  return assemblePrompt({ options, layers, sections: new PromptSections(), hooks: new HookBus(), sdkText }, undefined)
}

function thrown(fn: () => unknown): ToolError {
  try {
    fn()
  } catch (error) {
    return error as ToolError
  }
  throw new Error('did not throw')
}

describe('the SDK section when rendering fails', () => {
  it('wraps a renderer failure as ASSEMBLY_FAILED naming it, with the failure as cause', () => {
    const failure = new TypeError('schema walk broke')
    const error = thrown(() =>
      assembleWith(() => {
        throw failure
      }),
    )
    expect(error).toBeInstanceOf(ToolError)
    expect([error.code, error.message]).toEqual(['ASSEMBLY_FAILED', 'rendering the Code Mode SDK failed: schema walk broke'])
    expect(error.cause).toBe(failure)
  })

  it('passes an ASSEMBLY_FAILED ToolError through as is; wraps a ToolError of another code', () => {
    const own = new ToolError('ASSEMBLY_FAILED', 'budget cannot be met')
    expect(
      thrown(() =>
        assembleWith(() => {
          throw own
        }),
      ),
    ).toBe(own)
    const other = new ToolError('INVALID_OPTIONS', 'bad language')
    const wrapped = thrown(() =>
      assembleWith(() => {
        throw other
      }),
    )
    expect([wrapped.code, wrapped.message, wrapped.cause]).toEqual(['ASSEMBLY_FAILED', 'rendering the Code Mode SDK failed: bad language', other])
  })

  it('a refusal of assembly itself carries no cause', () => {
    const runtime = createToolRuntime()
    runtime.agent('coder').presentAs('code')
    const error = thrown(() => runtime.assemble('coder'))
    expect(error.code).toBe('ASSEMBLY_FAILED')
    expect('cause' in error).toBe(false)
  })

  it('the rendered text is the tools:sdk section, asked for the layer and the code runtime’s language', () => {
    const asked: unknown[] = []
    const assembly = assembleWith((agent, language) => (asked.push([agent, language]), 'SDK TEXT'))
    expect(asked).toEqual([[undefined, 'typescript']])
    expect(assembly.sections.find((s) => s.id === 'tools:sdk')?.text).toBe('SDK TEXT')
  })
})

describe('the assemble waterfall: context and what a listener may return', () => {
  const runtimeWith = (answer: (assembly: PromptAssembly) => unknown) => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('echo'))
    runtime.on('system-prompt/assemble', (assembly) => answer(assembly) as PromptAssembly)
    return runtime
  }

  it('the global layer’s listener context has no agent key', () => {
    const contexts: unknown[] = []
    const runtime = createToolRuntime()
    runtime.on('system-prompt/assemble', (assembly, context) => (contexts.push(context), assembly))
    runtime.assemble()
    runtime.assemble('a1')
    expect(contexts[0]).toStrictEqual({})
    expect(contexts[1]).toStrictEqual({ agent: 'a1' })
  })

  it('a function carrying a section’s fields is a malformed section; one carrying a tool’s is a malformed tool', () => {
    const sectionLike = Object.assign(() => 'x', { id: 's', order: 1, text: 't' })
    expect(thrown(() => runtimeWith((a) => ({ ...a, sections: [sectionLike] })).assemble()).message).toBe(
      'a system-prompt/assemble listener returned a malformed section at index 0',
    )
    const toolLike = () => 'x'
    Object.defineProperty(toolLike, 'name', { value: 'echo' })
    Object.assign(toolLike, { description: 'd', parameters: { type: 'object' } })
    expect(thrown(() => runtimeWith((a) => ({ ...a, tools: [toolLike] })).assemble()).message).toBe('a system-prompt/assemble listener returned a malformed tool at index 0')
  })
})

describe('section order', () => {
  it('an agent section registered before a global one of the same order comes first in the agent’s prompt', () => {
    const runtime = createToolRuntime()
    const agent = runtime.agent('a1')
    agent.section({ id: 'agent-first', order: 5, text: 'A' })
    runtime.section({ id: 'global-later', order: 5, text: 'G' })
    expect(runtime.assemble('a1').sections.map((s) => s.id)).toEqual(['agent-first', 'global-later'])
  })
})
