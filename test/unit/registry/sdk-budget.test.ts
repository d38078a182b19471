/**
 * `sdkBudgetChars` through the registry: the `tools:sdk` section of each scope is the
 * full SDK while it fits (byte-identical to the unbudgeted SDK) and the catalog form
 * past it; byte-stable for an unchanged tool set; computed per agent from what that
 * agent may call. Platform-neutral.
 */
import { describe, expect, it } from 'vitest'
import { CATALOG_FORM_SHARE } from '../../../src/code-mode/sdk-catalog.js'
import { renderToolsSdk } from '../../../src/code-mode/sdk.js'
import { createToolRuntime, DEFAULT_SDK_BUDGET_CHARS } from '../../../src/registry/index.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { registerLargeRegistry } from '../../support/large-registry-tools.js'
import { shuffled } from '../catalog/shuffle.js'
import { echoTool, idleCodeRuntime, thrownCode } from './helpers.js'


function registry(options: Partial<ToolRuntimeOptions> = {}, language = 'typescript'): ToolRuntime {
  return createToolRuntime({ mode: 'code', codeRuntime: idleCodeRuntime(language), ...options })
}

function sdkOf(runtime: ToolRuntime, agent?: string): string {
  return runtime.assemble(agent).sections.find((section) => section.id === 'tools:sdk')!.text
}

const STORAGE = LARGE_REGISTRY.filter((tool) => tool.name.startsWith('storage_'))

describe('sdkBudgetChars', () => {
  it('defaults to 12,000 and accepts a positive integer or Infinity; anything else is INVALID_OPTIONS', () => {
    expect(DEFAULT_SDK_BUDGET_CHARS).toBe(12_000)
    expect(createToolRuntime().options.sdkBudgetChars).toBe(12_000)
    expect(createToolRuntime({ sdkBudgetChars: 1 }).options.sdkBudgetChars).toBe(1)
    expect(createToolRuntime({ sdkBudgetChars: Number.POSITIVE_INFINITY }).options.sdkBudgetChars).toBe(Number.POSITIVE_INFINITY)
    for (const bad of [0, -1, 1.5, Number.NaN, Number.NEGATIVE_INFINITY, '12000', null]) {
      expect(thrownCode(() => createToolRuntime({ sdkBudgetChars: bad as number })), String(bad)).toBe('INVALID_OPTIONS')
    }
    expect(() => createToolRuntime({ sdkBudgetChars: 0 })).toThrow('options.sdkBudgetChars must be a positive integer or Infinity (got 0)')
  })

  it('fits: the section is the full SDK, byte-identical to the unbudgeted rendering', () => {
    for (const language of ['typescript', 'python']) {
      const budgeted = registry({}, language)
      const unbudgeted = registry({ sdkBudgetChars: Number.POSITIVE_INFINITY }, language)
      for (const runtime of [budgeted, unbudgeted]) {
        runtime.register(echoTool('alpha'))
        runtime.register(echoTool('beta'))
      }
      const inputs = ['alpha', 'beta'].map((name) => {
        const definition = budgeted.get(name)!
        return { name, description: definition.description, parameters: definition.parameters, output: definition.output.schema }
      })
      const expected = renderToolsSdk(inputs, { language })
      expect(expected).toMatch(/\balpha\b/)
      expect(sdkOf(budgeted)).toBe(expected)
      expect(sdkOf(unbudgeted)).toBe(expected)
    }
  })

  it('too big: the catalog form; far too big: namespaces only; Infinity: the full SDK whatever its size', () => {
    const index = registry()
    registerLargeRegistry(index, LARGE_REGISTRY)
    const text = sdkOf(index)
    expect(text.length).toBeLessThanOrEqual(DEFAULT_SDK_BUDGET_CHARS * CATALOG_FORM_SHARE)
    expect(text).toContain('## Tool catalog\n\n1,000 tools in 20 namespaces')
    expect(text).toMatch(/^- storage_\* \(48: [^)]*\) — storage_/m)
    expect(text).toContain('declare const catalog: {')
    expect(text).not.toContain('interface ToolArgsMap')

    const namespaces = registry({ sdkBudgetChars: 10_000 })
    registerLargeRegistry(namespaces, LARGE_REGISTRY)
    expect(sdkOf(namespaces)).toContain('Namespaces (tool count: main subjects):\n- analytics_* (47: ')
    expect(sdkOf(namespaces)).not.toMatch(/ — \w+_/)

    const unbounded = registry({ sdkBudgetChars: Number.POSITIVE_INFINITY })
    registerLargeRegistry(unbounded, STORAGE)
    expect(sdkOf(unbounded)).toContain('interface ToolArgsMap {\n  "storage_attach_volume"')
  })

  it('the whole Code Mode prompt of a 1,000-tool registry stays within 10,000 characters (≈ 2,500 tokens)', () => {
    const runtime = registry()
    registerLargeRegistry(runtime, LARGE_REGISTRY)
    const assembly = runtime.assemble()
    const prompt = assembly.sections.map((section) => section.text).join('\n\n') + JSON.stringify(assembly.tools)
    expect(prompt.length).toBeLessThanOrEqual(10_000)
  })

  it('is byte-stable: registration order, repeated assembly and a register/unregister round trip change nothing', () => {
    const a = registry()
    const b = registry()
    registerLargeRegistry(a, LARGE_REGISTRY)
    registerLargeRegistry(b, shuffled(LARGE_REGISTRY, 3))
    const text = sdkOf(a)
    expect(sdkOf(b)).toBe(text)
    expect(sdkOf(a)).toBe(text)
    const undo = a.register(echoTool('zz_extra'))
    expect(sdkOf(a)).toContain('1,001 tools')
    undo()
    expect(sdkOf(a)).toBe(text)
  })

  it('switches back to the full SDK when the tool set shrinks under the budget', () => {
    const runtime = registry({ sdkBudgetChars: 20_000 })
    registerLargeRegistry(runtime, STORAGE.slice(0, 4))
    const full = sdkOf(runtime)
    expect(full).toContain('interface ToolArgsMap')
    const undo = registerLargeRegistry(runtime, STORAGE.slice(4))
    expect(sdkOf(runtime)).toContain('## Tool catalog')
    undo()
    expect(sdkOf(runtime)).toBe(full)
  })

  it('is computed per agent from what that agent may call', () => {
    const runtime = registry({ sdkBudgetChars: 6_000 })
    registerLargeRegistry(runtime, STORAGE)
    const narrow = runtime.agent('narrow')
    narrow.restrict({ allow: ['storage_get_bucket', 'storage_list_buckets'] })
    const wide = runtime.agent('wide')
    wide.register(echoTool('wide_only_tool'))

    expect(sdkOf(runtime)).toContain('48 tools')
    expect(sdkOf(runtime, 'wide')).toContain('49 tools')
    expect(sdkOf(runtime, 'wide')).toContain('wide_only_tool')
    expect(sdkOf(runtime)).not.toContain('wide_only_tool')
    // Two tools fit: the narrow agent reads their full SDK, and nothing else.
    const own = sdkOf(runtime, 'narrow')
    expect(own).toContain('interface ToolArgsMap {\n  "storage_get_bucket"')
    expect(own).not.toContain('storage_delete_bucket')
  })

  it('follows the code runtime: a Python code runtime gets the Python catalog form', () => {
    const runtime = registry({}, 'python')
    registerLargeRegistry(runtime, LARGE_REGISTRY)
    const text = sdkOf(runtime)
    expect(text).toContain('```python\n')
    expect(text).toContain('    async def search(self, query: str, options: CatalogSearchOptions = ...) -> list[CatalogHit]:')
    expect(text).toContain('`await catalog.search(query, {"limit": 5})`')
  })
})
