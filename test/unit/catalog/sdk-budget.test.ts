/**
 * The SDK within a budget (`renderToolsSdkWithinBudget`), the catalog form it switches
 * to, and the per-tool declarations `catalog.search` / `catalog.describe` return.
 * Platform-neutral: runs in Node, workerd and Chromium.
 */
import { describe, expect, it } from 'vitest'
import { CATALOG_FORM_SHARE } from '../../../src/code-mode/sdk-catalog.js'
import { renderToolDeclaration, renderToolsSdk, renderToolsSdkWithinBudget, type SdkToolInput } from '../../../src/code-mode/sdk.js'
import { renderPythonSdkBlock } from '../../../src/code-mode/sdk-python.js'
import { renderTypeScriptSdkBlock } from '../../../src/code-mode/sdk-typescript.js'
import { ToolError } from '../../../src/errors.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { shuffled } from './shuffle.js'

const BIG: readonly SdkToolInput[] = LARGE_REGISTRY
const FEW: readonly SdkToolInput[] = LARGE_REGISTRY.filter((tool) => tool.name.startsWith('backup_')).slice(0, 6)
const LANGUAGES = ['typescript', 'python'] as const

describe('the SDK within a budget', () => {
  it('a full SDK that fits is returned unchanged, byte for byte, up to a budget of exactly its length', () => {
    for (const language of LANGUAGES) {
      const full = renderToolsSdk(FEW, { language })
      for (const maxChars of [full.length, full.length + 1, 1_000_000, Number.POSITIVE_INFINITY]) {
        expect(renderToolsSdkWithinBudget(FEW, { language, maxChars })).toEqual({ text: full, form: 'full', fits: true })
        expect(renderToolsSdk(FEW, { language, maxChars })).toBe(full)
      }
      expect(renderToolsSdkWithinBudget(FEW, { language, maxChars: full.length - 1 }).form).not.toBe('full')
    }
  })

  it('too big: the catalog form — instructions, the index with tool names, the catalog declarations — in half the budget', () => {
    const { text, form, fits } = renderToolsSdkWithinBudget(BIG, { maxChars: 12_000 })
    expect(form).toBe('index')
    expect(fits).toBe(true)
    expect(text.length).toBeLessThanOrEqual(12_000 * CATALOG_FORM_SHARE)
    expect(text.startsWith('## Writing code for run_code\n')).toBe(true)
    expect(text).toContain('\n## Tool catalog\n\n1,000 tools in 20 namespaces')
    expect(text).toMatch(/^- billing_\* \(\d+: .*\) — billing_\w+, /m)
    for (const declared of ['declare const catalog: {', 'search(query: string, options?: { limit?: number }): Promise<CatalogHit[]>;', 'describe(name: string): Promise<string>;', 'declare const tools: {', 'declare class ToolCallError']) {
      expect(text).toContain(declared)
    }
    // No tool is declared, and the instructions no longer point at maps that are not there.
    expect(text).not.toContain('ToolArgsMap')
    expect(text).not.toContain('ToolOutputMap')
    expect(text).not.toContain('The available tools:')
    expect(text).toContain('(its declaration: `await catalog.describe(name)`)')
    expect(text).not.toContain('storage_delete_bucket(args')
  })

  it('far too big for names: the namespaces alone', () => {
    // Half of 10,400 holds the instructions and every namespace, not one name per namespace.
    const { text, form, fits } = renderToolsSdkWithinBudget(BIG, { maxChars: 10_400 })
    expect(form).toBe('namespaces')
    expect(fits).toBe(true)
    expect(text.length).toBeLessThanOrEqual(5_200)
    expect(text).toContain('Namespaces (tool count: main subjects):')
    expect(text.match(/^- \w+_\* \(\d+: [^)]*\)$/gm)).toHaveLength(20)
    expect(text).not.toMatch(/storage_(get|list|delete)_/)
    expect(text).toContain('declare const catalog: {')
    // Half of 8,000 cannot list every namespace: the smallest fold into one line.
    const folded = renderToolsSdkWithinBudget(BIG, { maxChars: 8_000 })
    expect(folded).toMatchObject({ form: 'namespaces', fits: true })
    expect(folded.text.length).toBeLessThanOrEqual(4_000)
    expect(folded.text).toMatch(/^- \d+ more namespaces \([\d,]+ tools\): use catalog\.search$/m)
  })

  it('takes the whole budget only when half cannot hold even the namespaces, and says when nothing fits', () => {
    const whole = renderToolsSdkWithinBudget(BIG, { maxChars: 6_000 })
    expect(whole.fits).toBe(true)
    expect(whole.text.length).toBeGreaterThan(3_000)
    expect(whole.text.length).toBeLessThanOrEqual(6_000)
    const none = renderToolsSdkWithinBudget(BIG, { maxChars: 100 })
    expect(none).toMatchObject({ form: 'namespaces', fits: false })
    expect(none.text).toContain('declare const catalog: {')
  })

  it('is byte-stable: the same tool set in any order renders the same text, in both languages', () => {
    for (const language of LANGUAGES) {
      for (const maxChars of [12_000, 8_000]) {
        const text = renderToolsSdk(BIG, { language, maxChars })
        expect(renderToolsSdk(shuffled(BIG, 7), { language, maxChars })).toBe(text)
        expect(renderToolsSdk([...BIG].reverse(), { language, maxChars })).toBe(text)
      }
    }
  })

  it('the Python flavour declares catalog.search and catalog.describe in Python', () => {
    const { text, form } = renderToolsSdkWithinBudget(BIG, { language: 'python', maxChars: 12_000 })
    expect(form).toBe('index')
    expect(text).toContain('body of an async Python function')
    expect(text).toContain('`await catalog.search(query, {"limit": 5})`')
    expect(text).toContain('```python\n')
    for (const declared of [
      'class CatalogHit(TypedDict):',
      '    async def search(self, query: str, options: CatalogSearchOptions = ...) -> list[CatalogHit]:',
      '    async def describe(self, name: str) -> str:',
      'catalog: Catalog',
      'tools: Tools',
    ]) {
      expect(text).toContain(declared)
    }
    expect(text).not.toContain('declare const')
    expect(text).not.toContain('TypedDicts below')
    expect(text).toContain('(its declaration: `await catalog.describe(name)`)')
  })

  it('refuses a budget that is not a positive integer or Infinity', () => {
    for (const maxChars of [0, -1, 1.5, Number.NaN, Number.NEGATIVE_INFINITY, '100' as unknown as number]) {
      expect(() => renderToolsSdkWithinBudget(FEW, { maxChars })).toThrow(ToolError)
      try {
        renderToolsSdkWithinBudget(FEW, { maxChars })
      } catch (error) {
        expect((error as ToolError).code).toBe('INVALID_OPTIONS')
      }
    }
  })
})

/**
 * The type of `name` in a full-SDK map (`interface ToolArgsMap { "name": <type>; … }`).
 * Entries sit two spaces in and everything inside a type deeper, so an entry ends at
 * the first `;` followed by the next entry or by the map's closing brace.
 */
function mapEntry(block: string, map: 'ToolArgsMap' | 'ToolOutputMap', name: string): string {
  const body = block.slice(block.indexOf(`interface ${map} {\n`))
  const head = `\n  ${JSON.stringify(name)}: `
  const start = body.indexOf(head) + head.length
  const ends = [body.indexOf(';\n  "', start), body.indexOf(';\n}', start)].filter((i) => i >= 0)
  return body.slice(start, Math.min(...ends))
}

describe('tool declarations', () => {
  const EXOTIC: SdkToolInput = {
    name: 'my-tool',
    description: 'Does */ things.\n\nSecond paragraph.',
    parameters: { type: 'object', properties: { when: { type: 'string', description: 'ISO date.' } }, additionalProperties: false },
    output: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false } },
  }

  it('TypeScript: the argument and output types are exactly what the full SDK renders for the tool', () => {
    const tools = [...BIG.slice(0, 120), EXOTIC]
    const block = renderTypeScriptSdkBlock(tools)
    for (const tool of tools) {
      const declaration = renderToolDeclaration(tool)
      const key = /^[A-Za-z_$][\w$]*$/.test(tool.name) ? tool.name : JSON.stringify(tool.name)
      const optional = declaration.includes(`\n${key}(args?: `) || declaration.startsWith(`${key}(args?: `) ? '?' : ''
      expect(block).toContain(`  ${key}(args${optional}: ToolArgsMap[${JSON.stringify(tool.name)}]): Promise<ToolOutputMap[${JSON.stringify(tool.name)}]>;`)
      // The full SDK renders the types one level in; the declaration stands alone.
      const args = mapEntry(block, 'ToolArgsMap', tool.name)
      const output = mapEntry(block, 'ToolOutputMap', tool.name)
      expect(declaration.replaceAll('\n', '\n  ')).toContain(`${key}(args${optional}: ${args}): Promise<${output}>;`)
      expect(declaration.endsWith('>;')).toBe(true)
    }
  })

  it('TypeScript: JSDoc from the description (comment-safe), the member named as the SDK names it', () => {
    expect(renderToolDeclaration(EXOTIC)).toBe(
      [
        '/**',
        ' * Does *\\/ things.',
        ' *',
        ' * Second paragraph.',
        ' */',
        '"my-tool"(args?: {',
        '  /** ISO date. */',
        '  when?: string;',
        '}): Promise<{',
        '  id: number;',
        '}[]>;',
      ].join('\n'),
    )
    const [storage] = BIG.filter((tool) => tool.name === 'storage_delete_bucket')
    expect(renderToolDeclaration(storage!)).toMatch(/^\/\*\* .+ \*\/\nstorage_delete_bucket\(args: \{\n/)
  })

  it('Python: the TypedDicts and the Tools member the full SDK renders for the tool', () => {
    for (const tool of [...BIG.slice(0, 60), EXOTIC]) {
      const declaration = renderToolDeclaration(tool, 'python')
      const block = renderPythonSdkBlock([tool])
      // Alone, the tool's classes and member are the full SDK's, minus the shared preamble.
      const member = declaration.slice(declaration.indexOf('class Tools:\n') + 'class Tools:\n'.length)
      expect(block).toContain(member)
      for (const klass of declaration.split('\n\n\n').slice(0, -1)) expect(block).toContain(klass)
      expect(declaration).not.toContain('from typing import')
      expect(declaration).not.toContain('class ToolCallError')
    }
    expect(renderToolDeclaration(EXOTIC, 'python')).toContain('    def __getitem__(self, name: Literal["my-tool"]) -> Callable[[MyToolArgs], Awaitable[list[MyToolOutputItem]]]:')
  })

  it('refuses a language without a renderer', () => {
    expect(() => renderToolDeclaration(EXOTIC, 'cobol')).toThrow(/no Code Mode SDK renderer/)
  })
})
