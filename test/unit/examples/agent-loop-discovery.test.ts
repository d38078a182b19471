/**
 * The scripted agent loop over a registry too large for its SDK budget: the prompt
 * carries the catalog form, the model finds its tools with `catalog.search`, then runs
 * the task program; the answer is the demo registry's.
 */
import { describe, expect, it } from 'vitest'
import { DISCOVERY_PROGRAM, declaredNames, runScriptedTask } from '../../../examples/agent-loop/index.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { largeRegistryDefinition } from '../../support/large-registry-tools.js'

const extraTools = LARGE_REGISTRY.map((tool) => largeRegistryDefinition(tool))

describe('the agent loop over 1,000 more tools', () => {
  it('discovers list_orders, get_customer and get_product, then answers as over the demo tools alone', async () => {
    const demo = await runScriptedTask('code')
    expect(demo.sdkForm).toBe('full')
    const large = await runScriptedTask('code', { extraTools })
    expect(large).toMatchObject({ sdkForm: 'catalog', tools: 1_012, toolCalls: 2, executedCalls: 9 })
    expect(large.requests).toHaveLength(3)
    const system = large.messages[0]!.content
    expect(system).toContain('1,012 tools in 21 namespaces')
    expect(system).not.toContain('list_orders(args')
    const discovery = large.messages.find((message) => message.role === 'tool')!
    expect(declaredNames(discovery.content)).toEqual(['list_orders', 'get_customer', 'get_product'])
    expect(large.answerText).toBe(demo.answerText)
  })

  it('the scripted model refuses to go on when the search finds another tool than the task needs', async () => {
    const decoy = largeRegistryDefinition({
      name: 'orders_by_status_and_creation_date',
      description: 'List orders by status and creation date.',
      parameters: { type: 'object', properties: { status: { type: 'string' } }, additionalProperties: false },
      output: { type: 'object' },
    })
    await expect(runScriptedTask('code', { extraTools: [...extraTools, decoy] })).rejects.toThrow(
      'scripted model: the search found orders_by_status_and_creation_date, get_customer, get_product, the task needs list_orders, get_customer, get_product',
    )
  })

  it('reads declared names off the discovery output', () => {
    expect(DISCOVERY_PROGRAM).toContain("catalog.search(need, { limit: 3 })")
    expect(declaredNames('list orders: a, b\n/** doc */\nlist_orders(args?: {\n}): Promise<{}>;\nget_customer(args: {')).toEqual(['list_orders', 'get_customer'])
  })
})
