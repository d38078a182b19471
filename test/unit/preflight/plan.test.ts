/**
 * Plan extraction (`src/preflight/plan.ts`): static tool references in every shape the
 * issue lists, `dynamic` for every way a program can reach a tool by a computed name,
 * and hostile text bounded by the stripper's limits before anything parses it.
 */
import { describe, expect, it } from 'vitest'
import { extractPlan, extractPythonPlan } from '../../../src/preflight/plan.js'
import { MAX_NESTING_DEPTH, MAX_PROGRAM_CHARS } from '../../../src/code-runtime/strip.js'

const names = (code: string) => extractPlan(code).plan.calls.map((c) => c.name)

describe('preflight plan: static references', () => {
  it('lists tools.x(…) with the line and column of each reference', () => {
    const { plan } = extractPlan("const a = await tools.read_file({ path: 'a' })\n  await tools.write_file({ path: 'b', content: '' })")
    expect(plan).toEqual({
      calls: [
        { name: 'read_file', line: 1, column: 17 },
        { name: 'write_file', line: 2, column: 9 },
      ],
      dynamic: false,
    })
  })

  it('reads optional chaining, literal indexes and plain template names', () => {
    expect(names("await tools?.a({})\nawait tools.b?.({})\nawait tools['c']({})\nawait tools[\"d\"]({})\nawait tools[`e`]({})\nawait tools?.['f']({})")).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
    expect(extractPlan("await tools?.a({})\nawait tools['c']({})\nawait tools[`e`]({})").plan.dynamic).toBe(false)
  })

  it('follows destructuring (renamed, defaulted) to the call sites, and lists a destructured tool never called at its declaration', () => {
    const { plan } = extractPlan('const { a, b: c, d = null } = tools\nawait a({})\nawait c({ x: 1 })')
    expect(plan.dynamic).toBe(false)
    expect(plan.calls).toEqual([
      { name: 'd', line: 1, column: 18 },
      { name: 'a', line: 2, column: 7 },
      { name: 'b', line: 3, column: 7 },
    ])
  })

  it('follows an alias (`const t = tools`) to its members', () => {
    const { plan } = extractPlan('const t = tools\nawait t.list_files({})\nawait t.read_file({ path: "x" });')
    expect(plan).toEqual({ calls: [{ name: 'list_files', line: 2, column: 7 }, { name: 'read_file', line: 3, column: 7 }], dynamic: false })
  })

  it('ignores type annotations and `typeof tools`', () => {
    expect(extractPlan('const r: Array<{ tools: string }> = []\nif (typeof tools === "object") await tools.z()\nconst o = { count: 1 }\nconsole.log(o.count)').plan).toEqual({
      calls: [{ name: 'z', line: 2, column: 38 }],
      dynamic: false,
    })
  })
})

describe('preflight plan: dynamic', () => {
  it.each([
    ['a computed name', 'const n = "x"\nawait tools[n]({})'],
    ['a template name with a substitution', 'const n = "x"\nawait tools[`get_${n}`]({})'],
    ['an alias indexed by a variable', 'const t = tools\nconst n = "x"\nawait t[n]({})'],
    ['tools escaping as an argument', 'const f = (ns: unknown) => ns\nf(tools)'],
    ['tools escaping as a value', 'return tools'],
    ['a name found through catalog', 'const hits = await catalog.search("refund")\nfor (const h of hits) await tools[h.name]({})'],
    ['an escaped string name', "await tools['re\\u0061d']({})"],
    ['Object.keys(tools)', 'for (const k of Object.keys(tools)) console.log(k)'],
    ['a spread of tools', 'const all = { ...tools }'],
    ['tools read off the global object', 'await globalThis.tools.read_file({})'],
    ['tools read off this', 'await this.tools.read_file({})'],
    ['any member named tools (read conservatively)', 'const o = { t: 1 }\nconsole.log(o.tools)'],
    ['any key named tools (a pattern reads it off any object)', 'const o = { tools: 1 }'],
    ['a computed global', 'await globalThis["to" + "ols"].read_file({})'],
    ['this indexed', 'await this["tools"].read_file({})'],
    ['code from a string', 'await eval("tools.read_file({})")'],
    ['the Function constructor', 'await new Function("return tools")().x()'],
  ])('%s', (_label, code) => {
    expect(extractPlan(code).plan.dynamic).toBe(true)
  })

  it('keeps the static calls it found next to a dynamic one', () => {
    const { plan } = extractPlan('await tools.a({})\nconst n = "b"\nawait tools[n]({})')
    expect(plan).toEqual({ calls: [{ name: 'a', line: 1, column: 7 }], dynamic: true })
  })
})

describe('preflight plan: Python (a scan, no type-check)', () => {
  it('lists tools.x references and marks getattr / indexing dynamic', () => {
    expect(extractPythonPlan("x = await tools.read_file(path='a')\ny = await tools.list_files()").plan).toEqual({
      calls: [{ name: 'read_file', line: 1, column: 17 }, { name: 'list_files', line: 2, column: 17 }],
      dynamic: false,
    })
    expect(extractPythonPlan('f = getattr(tools, name)').plan.dynamic).toBe(true)
    expect(extractPythonPlan('await tools[name]()').plan.dynamic).toBe(true)
  })
})

describe('preflight plan: hostile text', () => {
  it('refuses a program over the size cap before parsing it, at once', () => {
    const started = performance.now()
    const result = extractPlan('x;'.repeat(MAX_PROGRAM_CHARS))
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(result.refusal).toMatchObject({ code: 'PROGRAM_BOUND', severity: 'error' })
    expect(result.plan).toEqual({ calls: [], dynamic: true })
  })

  it('refuses nesting over the depth limit with its line', () => {
    const result = extractPlan(`const a = 1\n${'['.repeat(MAX_NESTING_DEPTH + 1)}${']'.repeat(MAX_NESTING_DEPTH + 1)}`)
    expect(result.refusal).toMatchObject({ code: 'PROGRAM_BOUND', line: 2 })
  })

  it('refuses the parser-backtracking shape within the work budget instead of running exponentially', () => {
    // Each level doubles sucrase's work: 40 levels would be ~5e12 units unbounded.
    const started = performance.now()
    const result = extractPlan(`${'<T>('.repeat(40)}x${')'.repeat(40)}`)
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(result.refusal?.code).toBe('PROGRAM_BOUND')
  })

  it('answers a syntax error with its position, and an empty dynamic plan', () => {
    const result = extractPlan('await tools.read_file({ path: "a" }\nconst x = 1')
    expect(result.refusal).toMatchObject({ code: 'SYNTAX', severity: 'error' })
    expect(result.plan.dynamic).toBe(true)
  })

  it('stays linear on many calls (8,000 references, near the size cap)', () => {
    const code = Array.from({ length: 8_000 }, (_, i) => `await tools.t${i % 7}({ i: ${i} })`).join('\n')
    const result = extractPlan(code)
    expect(result.plan.calls).toHaveLength(8_000)
    expect(result.plan.calls[7_999]).toEqual({ name: "t5", line: 8_000, column: 7 })
  })
})
