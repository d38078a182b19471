/**
 * Discovery end to end, one suite for every runtime (Node, Chromium, workerd): a
 * registry too large for its SDK budget, a program that finds a tool with
 * `catalog.search`, reads its declaration with `catalog.describe`, and calls it through
 * `tools` although the prompt never declared it. Platform-neutral: it imports only
 * vitest, `src/` and the generated fixture.
 *
 * @module
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { CodeRuntime } from '../../src/code-runtime/contract.js'
import { createToolRuntime } from '../../src/registry/index.js'
import { LARGE_REGISTRY } from '../fixtures/large-registry.js'
import { largeRegistryDefinition, registerLargeRegistry } from './large-registry-tools.js'

/** The program under test: plain words in, a call of the tool it found out. */
export const DISCOVERY_PROGRAM = `
const [hit] = await catalog.search('delete the staging bucket', { limit: 1 })
const declaration = await catalog.describe(hit.name)
const deleted = await tools[hit.name]({ bucket_id: 'staging' })
let missing
try { await catalog.describe('storage_remove_bucket') } catch (error) { missing = [error.name, error.toolName, error.message] }
return { name: hit.name, declared: declaration === hit.declaration, head: declaration.split('\\n')[1], deleted, missing }
`

/** Registers the suite for one code runtime; `makeCodeRuntime` is called once and disposed after. */
export function describeCatalogDiscovery(label: string, makeCodeRuntime: () => CodeRuntime): void {
  describe(`catalog discovery: ${label}`, () => {
    const codeRuntime = makeCodeRuntime()
    const registry = createToolRuntime({ mode: 'code', codeRuntime })
    const domains = LARGE_REGISTRY.filter((tool) => /^(storage|billing|crm|iam)_/.test(tool.name))
    const bucket = domains.find((tool) => tool.name === 'storage_delete_bucket')!
    registerLargeRegistry(registry, domains.filter((tool) => tool !== bucket))
    registry.register(largeRegistryDefinition(bucket, (args: { bucket_id: string }) => ({ deleted: true, bucket_id: args.bucket_id })))

    afterAll(async () => {
      await registry.dispose()
      await codeRuntime.dispose()
    })

    it('the prompt carries the index, not the declarations', () => {
      const sdk = registry.assemble().sections.find((section) => section.id === 'tools:sdk')!.text
      expect(sdk).toContain(`${domains.length} tools in 4 namespaces`)
      expect(sdk).toContain('declare const catalog: {')
      expect(sdk).not.toContain('storage_delete_bucket(args')
    })

    it('a program searches, describes and calls an undeclared tool', async () => {
      const result = await registry.execute({
        callId: 'discover',
        name: 'run_code',
        arguments: { description: 'find and delete the staging bucket', code: DISCOVERY_PROGRAM },
        signal: AbortSignal.timeout(30_000),
      })
      if (result.isError) throw new Error(result.error.message)
      expect((result.value as { result: unknown }).result).toEqual({
        name: 'storage_delete_bucket',
        declared: true,
        head: 'storage_delete_bucket(args: {',
        deleted: { deleted: true, bucket_id: 'staging' },
        missing: ['ToolCallError', 'catalog.describe', expect.stringMatching(/^no tool named "storage_remove_bucket" is available to this program; the closest: storage_delete_bucket/)],
      })
    })
  })
}
