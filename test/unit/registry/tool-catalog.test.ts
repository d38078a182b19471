/**
 * `runtime.catalog(scope)`: the searchable view of what a scope may call — the same
 * tools, ranking and declarations a Code Mode program of that scope gets as `catalog`.
 * Scope masking, declarations, caching per tool set. Platform-neutral.
 */
import { describe, expect, it } from 'vitest'
import { createCatalog } from '../../../src/catalog/index.js'
import { renderToolDeclaration } from '../../../src/code-mode/sdk.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { ToolCatalogs } from '../../../src/registry/tool-catalog.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { registerLargeRegistry } from '../../support/large-registry-tools.js'
import { echoTool, thrownCode, idleCodeRuntime } from './helpers.js'
import { thrownToolError } from '../../support/refusal.js'

const BILLING = LARGE_REGISTRY.filter((tool) => tool.name.startsWith('billing_'))

function pythonRuntime(): CodeRuntime {
  return {
    language: 'python',
    isolation: 'in-process-test',
    capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
    run: async () => ({ logs: [] }),
    dispose: async () => {},
  }
}

function billing(runtime: ToolRuntime = createToolRuntime()): ToolRuntime {
  registerLargeRegistry(runtime, BILLING)
  return runtime
}

function declarationOf(runtime: ToolRuntime, name: string, language = 'typescript'): string {
  const definition = runtime.get(name)!
  return renderToolDeclaration({ name, description: definition.description, parameters: definition.parameters, output: definition.output.schema }, language)
}

describe('runtime.catalog', () => {
  it('searches the scope’s tools: best first, each hit with its description and declaration', () => {
    const runtime = billing()
    const catalog = runtime.catalog()
    expect(catalog.size).toBe(BILLING.length)
    expect(catalog.language).toBe('typescript')
    const hits = catalog.search('refund a payment', { limit: 3 })
    expect(hits).toHaveLength(3)
    // The ranking is createCatalog's over the registered tools' names, descriptions and parameters.
    const reference = createCatalog(BILLING).search('refund a payment', { limit: 3 })
    expect(hits.map((hit) => hit.name)).toEqual(reference.map((hit) => hit.name))
    for (const hit of hits) {
      expect(hit.description).toBe(runtime.get(hit.name)!.description)
      expect(hit.declaration).toBe(declarationOf(runtime, hit.name))
    }
    expect(catalog.search('billing', {}).length).toBe(10)
    expect(catalog.search('')).toEqual([])
  })

  it('describes a tool by name, and suggests the closest names for one it does not have', () => {
    const runtime = billing()
    expect(runtime.catalog().describe('billing_delete_invoice')).toBe(declarationOf(runtime, 'billing_delete_invoice'))
    expect(runtime.catalog().describe('billing_remove_invoice')).toBeUndefined()
    expect(runtime.catalog().closest('billing_remove_invoice')[0]).toBe('billing_delete_invoice')
    expect(runtime.catalog().describe(42 as unknown as string)).toBeUndefined()
    expect(runtime.catalog().closest(42 as unknown as string)).toEqual([])
  })

  it('refuses a query that is not a string and a bad limit (INVALID_OPTIONS)', () => {
    const catalog = billing().catalog()
    expect(thrownCode(() => catalog.search(7 as unknown as string))).toBe('INVALID_OPTIONS')
    expect(thrownCode(() => catalog.search('invoice', { limit: 0 }))).toBe('INVALID_OPTIONS')
    expect(thrownCode(() => catalog.search('invoice', { limit: 2.5 }))).toBe('INVALID_OPTIONS')
  })

  it('masks by scope: an agent cannot find or describe what it cannot call', () => {
    const runtime = billing()
    const restricted = runtime.agent('restricted')
    restricted.restrict({ deny: ['billing_delete_invoice'] })
    const other = runtime.agent('other')
    other.register(echoTool('other_refund_helper'))

    const mine = restricted.catalog()
    expect(mine.size).toBe(BILLING.length - 1)
    expect(mine.describe('billing_delete_invoice')).toBeUndefined()
    expect(mine.search('delete an invoice', { limit: 50 }).map((hit) => hit.name)).not.toContain('billing_delete_invoice')
    expect(mine.closest('billing_delete_invoice')).not.toContain('billing_delete_invoice')
    // An agent's own tool is its own: neither the global scope nor another agent sees it.
    expect(runtime.catalog().describe('other_refund_helper')).toBeUndefined()
    expect(mine.describe('other_refund_helper')).toBeUndefined()
    expect(other.catalog().describe('other_refund_helper')).toContain('other_refund_helper(args?: {')
    expect(runtime.catalog('other').describe('other_refund_helper')).toBe(other.catalog().describe('other_refund_helper'))
    // An allow mask narrows to exactly its names.
    const narrow = runtime.agent('narrow')
    narrow.restrict({ allow: ['billing_get_invoice'] })
    expect(narrow.catalog().search('invoice', { limit: 50 }).map((hit) => hit.name)).toEqual(['billing_get_invoice'])
  })

  it('is built once per tool set: the same catalog until the scope’s tools change', () => {
    const runtime = billing()
    const agent = runtime.agent('a')
    const global = runtime.catalog()
    expect(runtime.catalog()).toBe(global)
    const ofAgent = agent.catalog()
    expect(agent.catalog()).toBe(ofAgent)

    // A change in one agent's layer leaves the global catalog alone.
    agent.register(echoTool('a_only'))
    expect(runtime.catalog()).toBe(global)
    const changed = agent.catalog()
    expect(changed).not.toBe(ofAgent)
    expect(changed.size).toBe(ofAgent.size + 1)

    // A global change reaches every scope.
    const undo = runtime.register(echoTool('zz_new'))
    expect(runtime.catalog()).not.toBe(global)
    expect(runtime.catalog().describe('zz_new')).toContain('zz_new(args?: {')
    expect(agent.catalog().describe('zz_new')).toContain('zz_new(args?: {')
    undo()
    expect(runtime.catalog().describe('zz_new')).toBeUndefined()
    expect(runtime.catalog().size).toBe(BILLING.length)
  })

  it('a disposed agent’s catalog goes; its id later starts from the global tools', async () => {
    const runtime = billing()
    const agent = runtime.agent('temp')
    agent.restrict({ allow: ['billing_get_invoice'] })
    expect(agent.catalog().size).toBe(1)
    await agent.dispose()
    expect(runtime.catalog('temp').size).toBe(BILLING.length)
    expect(runtime.agent('temp').catalog().size).toBe(BILLING.length)
  })

  it('declares in the code runtime’s language', () => {
    const runtime = billing(createToolRuntime({ mode: 'code', codeRuntime: pythonRuntime() }))
    const catalog = runtime.catalog()
    expect(catalog.language).toBe('python')
    const [hit] = catalog.search('create an invoice', { limit: 1 })
    expect(hit!.declaration).toBe(declarationOf(runtime, hit!.name, 'python'))
    expect(hit!.declaration).toContain(`class Tools:\n    async def ${hit!.name}(self, args: `)
  })

  it('hits and their list are frozen', () => {
    const hits = billing().catalog().search('invoice', { limit: 2 })
    expect(Object.isFrozen(hits)).toBe(true)
    expect(hits.every((hit) => Object.isFrozen(hit))).toBe(true)
  })
})

describe('runtime.catalog: one catalog per tool set', () => {
  it('a global change heard on tools/changed drops every scope’s catalog, even when undone before the next read', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    const agent = runtime.agent('bob')
    const global = runtime.catalog()
    const ofAgent = agent.catalog()
    runtime.register(echoTool('b'))()
    const globalAfter = runtime.catalog()
    const agentAfter = agent.catalog()
    expect(globalAfter).not.toBe(global)
    expect(agentAfter).not.toBe(ofAgent)
    expect([globalAfter.size, agentAfter.size]).toEqual([1, 1])
    // Until the next change, every read shares it.
    expect(runtime.catalog()).toBe(globalAfter)
    expect(agent.catalog()).toBe(agentAfter)
  })

  it('an id no agent was created for gets the global catalog itself: made-up ids (any client may send one) create nothing', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    const global = runtime.catalog()
    for (let i = 0; i < 1_000; i++) expect(runtime.catalog(`made-up-${i}`)).toBe(global)
    expect(runtime.agent('real').catalog()).not.toBe(global)
  })

  it('an agent’s change drops only that agent’s catalog', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    const agent = runtime.agent('bob')
    const other = runtime.agent('eve')
    const global = runtime.catalog()
    const ofAgent = agent.catalog()
    const ofOther = other.catalog()
    agent.restrict({ deny: ['a'] })()
    expect(agent.catalog()).not.toBe(ofAgent)
    expect(runtime.catalog()).toBe(global)
    expect(other.catalog()).toBe(ofOther)
  })

  it('a disposing agent’s tool set changes before tools/changed says so: a longer set is not served the old catalog', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('first'))
    runtime.register(echoTool('second'))
    const agent = runtime.agent('narrow')
    agent.restrict({ allow: ['first'] })
    expect(agent.catalog().size).toBe(1)
    // The layer closes at once; the dispose event comes after quiescence.
    const disposed = agent.dispose()
    const now = runtime.catalog('narrow')
    expect(now.size).toBe(2)
    expect(now.describe('second')).toBe(runtime.catalog().describe('second'))
    await disposed
  })

  it('… nor is a set of the same size with other tools', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('shared'))
    const agent = runtime.agent('own')
    agent.register(echoTool('mine'))
    agent.restrict({ deny: ['shared'] })
    expect(agent.catalog().size).toBe(1)
    expect(agent.catalog().describe('mine')).toBeDefined()
    const disposed = agent.dispose()
    const now = runtime.catalog('own')
    expect(now.size).toBe(1)
    expect(now.describe('mine')).toBeUndefined()
    expect(now.describe('shared')).toBe(runtime.catalog().describe('shared'))
    await disposed
  })
})

describe('runtime.catalog: language and refusals', () => {
  it('declares in TypeScript when the code runtime’s language has no renderer (and without a code runtime)', () => {
    const cobol = createToolRuntime({ codeRuntime: idleCodeRuntime('cobol') })
    cobol.register(echoTool('echo'))
    const catalog = cobol.catalog()
    expect(catalog.language).toBe('typescript')
    const definition = cobol.get('echo')!
    const declaration = renderToolDeclaration(
      { name: 'echo', description: definition.description, parameters: definition.parameters, output: definition.output.schema },
      'typescript',
    )
    expect(catalog.describe('echo')).toBe(declaration)
    expect(catalog.search('echo')[0]!.declaration).toBe(declaration)
    expect(createToolRuntime().catalog().language).toBe('typescript')
    expect(createToolRuntime({ codeRuntime: idleCodeRuntime('python') }).catalog().language).toBe('python')
  })

  it('refuses a query that is not a string with INVALID_OPTIONS naming its type', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('echo'))
    const catalog = runtime.catalog()
    expect(thrownToolError(() => catalog.search(7 as unknown as string))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'catalog.search: query must be a string (got number)',
    })
    expect(thrownToolError(() => catalog.search(null as unknown as string))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'catalog.search: query must be a string (got object)',
    })
  })
})

describe('ToolCatalogs on its own: built from the two context fields it reads (layers, options)', () => {
  it("lists what the agent's view lets a program call, and reads the code runtime's language at use", () => {
    const transport = detachToolDefinition(echoTool('run_code_stand_in'))
    const layers = new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: () => {} })
    layers.add(undefined, detachToolDefinition(echoTool('both_ways')))
    layers.add(undefined, detachToolDefinition({ ...echoTool('native_only'), callers: ['native'] }))
    let options = validateRuntimeOptions({})
    const catalogs = new ToolCatalogs({ layers, get options() { return options } })
    const catalog = catalogs.catalog(undefined)
    expect(catalog.size).toBe(1)
    expect(catalog.describe('both_ways')).toContain('both_ways(args?: {')
    expect(catalog.describe('native_only')).toBeUndefined()
    expect(catalog.language).toBe('typescript')
    expect(catalogs.sdkText(undefined, 'typescript')).toContain('both_ways')
    expect(catalogs.sdkText(undefined, 'typescript')).not.toContain('native_only')
    // A new tool set (a change the layers announce) gets a new catalog in the language configured now.
    options = validateRuntimeOptions({ codeRuntime: idleCodeRuntime('python') })
    layers.add(undefined, detachToolDefinition(echoTool('later')))
    const next = catalogs.catalog(undefined)
    expect(next).not.toBe(catalog)
    expect(next.language).toBe('python')
    expect(next.size).toBe(2)
  })
})

describe('ToolCatalogs on its own: what it keeps between uses', () => {
  function parts() {
    const transport = detachToolDefinition(echoTool('run_code_stand_in'))
    const layers = new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: () => {} })
    let optionReads = 0
    const options = validateRuntimeOptions({})
    // Not told of changes (no `changed()` call): only its own check of the tool list can see one.
    const catalogs = new ToolCatalogs({
      layers,
      get options() {
        optionReads++
        return options
      },
    })
    return { layers, catalogs, optionReads: () => optionReads }
  }

  it('a tool set of the same size with another tool in it gets a new catalog, even unannounced', () => {
    const { layers, catalogs } = parts()
    layers.add(undefined, detachToolDefinition(echoTool('a')))
    const removeB = layers.add(undefined, detachToolDefinition(echoTool('b')))
    const first = catalogs.catalog(undefined)
    expect(catalogs.catalog(undefined)).toBe(first)
    removeB()
    layers.add(undefined, detachToolDefinition(echoTool('c')))
    const next = catalogs.catalog(undefined)
    expect(next).not.toBe(first)
    expect([next.size, next.describe('b'), typeof next.describe('c')]).toEqual([2, undefined, 'string'])
    expect(catalogs.sdkText(undefined, 'typescript')).toContain('c(args?: ToolArgsMap["c"])')
    expect(catalogs.sdkText(undefined, 'typescript')).not.toContain('b(args?:')
  })

  it('the SDK text is rendered once per tool set and language: asking again reads no option', () => {
    const { layers, catalogs, optionReads } = parts()
    layers.add(undefined, detachToolDefinition(echoTool('a')))
    const text = catalogs.sdkText(undefined, 'typescript')
    const reads = optionReads()
    expect(catalogs.sdkText(undefined, 'typescript')).toBe(text)
    expect(optionReads()).toBe(reads)
    expect(catalogs.sdkText(undefined, 'python')).not.toBe(text)
    expect(optionReads()).toBeGreaterThan(reads)
  })

  it('a declaration is rendered once per tool and language: describing again reads nothing of the registration', () => {
    const { layers, catalogs } = parts()
    const registration = detachToolDefinition(echoTool('a'))
    let definitionReads = 0
    const counted = new Proxy(registration, {
      get(target, key, receiver) {
        if (key === 'definition') definitionReads++
        return Reflect.get(target, key, receiver) as unknown
      },
    })
    layers.add(undefined, counted)
    const catalog = catalogs.catalog(undefined)
    const declaration = catalog.describe('a')
    expect(declaration).toContain('a(args?: {')
    const reads = definitionReads
    expect(catalog.describe('a')).toBe(declaration)
    expect(catalog.search('echo').map((hit) => hit.declaration)).toEqual([declaration])
    // search reads the description for its hit, never the declaration's inputs again.
    const afterSearch = definitionReads
    expect(catalog.describe('a')).toBe(declaration)
    expect(definitionReads).toBe(afterSearch)
    expect(reads).toBeGreaterThan(0)
  })
})
