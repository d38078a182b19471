import { describe, expect, it } from 'vitest'
import { createDemoTools, registerDemoTools } from '../../../demo/tools/index.js'
import { renderToolsSdk } from '../../../src/code-mode/sdk.js'
import type { AnyToolDefinition } from '../../../src/types.js'

describe('createDemoTools / registerDemoTools', () => {
  it('creates twelve uniquely named tools over fresh state', () => {
    const { tools } = createDemoTools()
    expect(tools).toHaveLength(12)
    expect(new Set(tools.map((t) => t.name)).size).toBe(12)
    expect(createDemoTools().workspace).not.toBe(createDemoTools().workspace)
    expect(createDemoTools({ include: ['shop'] }).tools).toHaveLength(6)
  })

  it('registers every tool and the disposer removes them all', () => {
    const registered = new Map<string, AnyToolDefinition>()
    const scope = {
      register(def: AnyToolDefinition) {
        registered.set(def.name, def)
        return () => registered.delete(def.name)
      },
    }
    const dispose = registerDemoTools(scope)
    expect(registered.size).toBe(12)
    dispose()
    expect(registered.size).toBe(0)
  })

  it('undoes earlier registrations when one throws', () => {
    const registered = new Set<string>()
    const scope = {
      register(def: AnyToolDefinition) {
        if (def.name === 'grep') throw new Error('duplicate')
        registered.add(def.name)
        return () => registered.delete(def.name)
      },
    }
    expect(() => registerDemoTools(scope)).toThrow('duplicate')
    expect(registered.size).toBe(0)
  })

  it('renders as a Code Mode SDK: exact args and outputs for every tool', () => {
    const { tools } = createDemoTools()
    const sdk = renderToolsSdk(tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, output: t.output.schema })))
    expect(sdk).toContain('list_orders(args?: ToolArgsMap["list_orders"]): Promise<ToolOutputMap["list_orders"]>;')
    expect(sdk).toContain('read_file(args: ToolArgsMap["read_file"])')
    expect(sdk).toContain('status: "pending" | "paid" | "shipped" | "delivered" | "cancelled" | "refunded";')
    // Nothing degrades, and no argument type takes undeclared keys: `read_file({ path, limt: 2 })` is a type error.
    expect(sdk.split('\n').filter((line) => line.includes('unknown'))).toEqual([])
    const py = renderToolsSdk(tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, output: t.output.schema })), { language: 'python' })
    expect(py).toContain('class ListOrdersOutputOrdersItem(TypedDict):')
  })
})
