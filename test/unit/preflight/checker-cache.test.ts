/**
 * The warm checker's result cache: the same program against the same SDK is answered
 * with the very same (frozen) result without building a checker; another SDK, or a
 * program pushed out by 16 newer ones, is checked again and answers the same diagnostics.
 * A registry's SDK declarations are kept for a bounded number of scopes.
 */
import { describe, expect, it } from 'vitest'
import { loadTypeScript } from '../../../platforms/node/index.js'
import { MAX_DECLARATION_ENTRIES, Preflight } from '../../../src/preflight/preflight.js'
import { createTypeScriptChecker, MAX_CACHED_DIAGNOSTICS, MAX_CACHED_RESULTS } from '../../../src/preflight/typescript-checker.js'

const { ts, readLib } = await loadTypeScript()
const SDK = 'declare const tools: { write_note(args: { title: string }): Promise<number> };'
const OTHER_SDK = 'declare const tools: { write_notes(args: { title: string }): Promise<number> };'
const PROGRAM = 'await tools.write_notes({ title: 5 })'

describe('the checker cache', () => {
  it('answers a repeat with the same frozen result, and only for the same SDK', () => {
    const checker = createTypeScriptChecker(ts, readLib)
    const first = checker.check(PROGRAM, SDK)
    expect(first.map((d) => d.code)).toEqual([2551])
    expect(Object.isFrozen(first) && Object.isFrozen(first[0])).toBe(true)
    expect(checker.check(PROGRAM, SDK)).toBe(first)
    // Another SDK: the same text checks differently (here, the tool exists and the argument is wrong).
    expect(checker.check(PROGRAM, OTHER_SDK).map((d) => d.code)).toEqual([2322])
    expect(checker.check(PROGRAM, SDK)).toBe(first)
  })

  it(`keeps the ${MAX_CACHED_RESULTS} most recent programs per SDK; an older one is checked again, with the same answer`, () => {
    const checker = createTypeScriptChecker(ts, readLib)
    const first = checker.check(PROGRAM, SDK)
    for (let i = 0; i < MAX_CACHED_RESULTS; i++) checker.check(`${PROGRAM}\n// ${i}`, SDK)
    const again = checker.check(PROGRAM, SDK)
    expect(again).not.toBe(first)
    expect(again).toEqual(first)
  })

  it(`keeps no result of more than ${MAX_CACHED_DIAGNOSTICS} diagnostics (a hostile program cannot make the cache hold megabytes)`, () => {
    const checker = createTypeScriptChecker(ts, readLib)
    const many = Array.from({ length: MAX_CACHED_DIAGNOSTICS + 1 }, (_, i) => `nope${i}()`).join('\n')
    const first = checker.check(many, SDK)
    expect(first).toHaveLength(MAX_CACHED_DIAGNOSTICS + 1)
    expect(checker.check(many, SDK)).not.toBe(first)
  })
})

describe('the SDK declarations cache of a registry preflight', () => {
  const engine = { check: async () => ({ diagnostics: [], notes: [] }) } as unknown as ConstructorParameters<typeof Preflight>[0]['engine']
  const parameters = { type: 'object', properties: {} }
  const tools = (agent: string | undefined) => [{ name: `tool_of_${agent ?? 'global'}`, description: 'd', parameters, output: undefined }] as never

  it(`keeps the declarations of the ${MAX_DECLARATION_ENTRIES} most recent scopes: an id a client made up cannot grow it`, () => {
    const preflight = new Preflight({ engine, tools })
    const first = preflight.declarations('agent-0')
    expect(preflight.declarations('agent-0')).toBe(first)
    for (let i = 1; i < MAX_DECLARATION_ENTRIES; i++) preflight.declarations(`agent-${i}`)
    expect(preflight.declarations('agent-0')).toBe(first)
    for (let i = 0; i < 10_000; i++) preflight.declarations(`made-up-${i}`)
    const again = preflight.declarations('agent-0')
    expect(again).not.toBe(first)
    expect(again).toEqual(first)
    expect(again.text).toContain('tool_of_agent-0')
  })
})
