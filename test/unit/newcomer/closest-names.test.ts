/**
 * The "did you mean" part of the sandbox's error for an unknown binding
 * (src/code-runtime/closest-names.ts, used by the bootstrap every runtime runs): which
 * names are suggested, and that the work stays bounded whatever the program asks for.
 */
import { describe, expect, it } from 'vitest'
import { boundedDistance, closestNames, MAX_COMPARED_CHARS, MAX_SUGGESTIONS } from '../../../src/code-runtime/closest-names.js'
import { unknownBindingMessage } from '../../../src/code-runtime/in-sandbox/bootstrap.js'

const TOOLS = ['list_files', 'read_file', 'write_file', 'edit_file', 'search_code', 'run_tests']

describe('boundedDistance', () => {
  it.each([
    ['kitten', 'sitting', 3],
    ['', 'abc', 3],
    ['abc', 'abc', 0],
    ['listfile', 'listfiles', 1],
    ['raedfile', 'readfile', 1],
    ['ab', 'ba', 1],
  ])('%s → %s is %i', (a, b, d) => {
    expect(boundedDistance(a, b, 10)).toBe(d)
    expect(boundedDistance(b, a, 10)).toBe(d)
  })

  it('stops at the limit: anything beyond it reads limit + 1', () => {
    expect(boundedDistance('kitten', 'sitting', 2)).toBe(3)
    expect(boundedDistance('a', 'abcdefgh', 2)).toBe(3)
    expect(boundedDistance('abcdefgh', 'hgfedcba', 1)).toBe(2)
  })

  it('counts an adjacent swap as one edit only when both letters match crosswise', () => {
    expect(boundedDistance('abc', 'acb', 10)).toBe(1)
    expect(boundedDistance('abcd', 'badc', 10)).toBe(2)
    expect(boundedDistance('ab', 'bx', 10)).toBe(2)
    expect(boundedDistance('ab', 'xa', 10)).toBe(2)
    expect(boundedDistance('abc', 'xbc', 10)).toBe(1)
    expect(boundedDistance('xab', 'xba', 10)).toBe(1)
    // Optimal string alignment: a swapped pair is not edited again.
    expect(boundedDistance('ca', 'abc', 10)).toBe(3)
  })
})

describe('closestNames', () => {
  it('suggests the near misses models make: a letter off, swapped, another spelling of the same name', () => {
    expect(closestNames('list_file', TOOLS)).toEqual(['list_files'])
    expect(closestNames('raed_file', TOOLS)).toEqual(['read_file'])
    expect(closestNames('readFile', TOOLS)).toEqual(['read_file'])
    expect(closestNames('READ-FILE', TOOLS)).toEqual(['read_file'])
    expect(closestNames('runTest', TOOLS)).toEqual(['run_tests'])
  })

  it('best first, ties in the namespace order, at most three', () => {
    expect(closestNames('rite_file', TOOLS)).toEqual(['write_file'])
    expect(closestNames('get_usr', ['set_user', 'get_users', 'get_user', 'delete_user'])).toEqual(['get_user', 'set_user', 'get_users'])
    const many = Array.from({ length: 10 }, (_, i) => `tool${i}`)
    expect(closestNames('tool', many)).toHaveLength(MAX_SUGGESTIONS)
    expect(closestNames('tool3', many)[0]).toBe('tool3')
    // Equally close: the namespace's order, whatever the number of ties.
    const ties = ['ab1', 'ab2', 'ab3', 'ab4', 'ab5', 'ab6', 'ab7', 'ab8', 'ab9', 'abc', 'abd', 'abe']
    expect(closestNames('ab0', ties)).toEqual(['ab1', 'ab2', 'ab3'])
    expect(closestNames('ab0', [...ties].reverse())).toEqual(['abe', 'abd', 'abc'])
  })

  it('nothing when nothing is close, or the name has no letters or digits', () => {
    expect(closestNames('zzzzzzzz', TOOLS)).toEqual([])
    expect(closestNames('x', TOOLS)).toEqual([])
    expect(closestNames('__', TOOLS)).toEqual([])
    expect(closestNames('__', ['a', 'b', '_'])).toEqual([])
    expect(closestNames('list_file', [])).toEqual([])
  })

  it('compares the first MAX_COMPARED_CHARS characters of each name, separators included, and nothing past them', () => {
    expect(MAX_COMPARED_CHARS).toBe(64)
    const head = 'a'.repeat(64)
    // Equal in their first 64 characters: the same name, whatever follows.
    expect(closestNames(`${head}bbbbbbbbbb`, [head, 'other'])).toEqual([head])
    expect(closestNames(head, [`${head}bbbbbbbbbb`])).toEqual([`${head}bbbbbbbbbb`])
    // The cut comes before separators are dropped: 64 characters of `a_` are 32 letters.
    expect(closestNames(`${'a_'.repeat(32)}bbbbbbbbbb`, ['a'.repeat(32)])).toEqual(['a'.repeat(32)])
    // Within the first 64, a difference counts.
    expect(closestNames(`${'a'.repeat(54)}bbbbbbbbbb`, [head])).toEqual([])
  })

  it('allows about a third of the name in edits: at least 1, at most 4', () => {
    expect(closestNames('abc', ['abd', 'ade'])).toEqual(['abd'])
    expect(closestNames('ab', ['ax', 'xy'])).toEqual(['ax'])
    expect(closestNames('abcdef', ['abcdxy', 'abcxyz'])).toEqual(['abcdxy'])
    expect(closestNames('abcdefghi', ['abcdefxyz', 'abcdewxyz'])).toEqual(['abcdefxyz'])
    expect(closestNames('abcdefghijklmno', ['abcdefghijkwxyz', 'abcdefghijvwxyz'])).toEqual(['abcdefghijkwxyz'])
    expect(closestNames('abcdefghijklmnopqrstu', ['abcdefghijklmnopqwxyz', 'abcdefghijklmnopvwxyz'])).toEqual(['abcdefghijklmnopqwxyz'])
  })

  it('stays bounded: a megabyte-long name against 5,000 names answers at once', () => {
    const names = Array.from({ length: 5_000 }, (_, i) => `${'domain'.repeat(8)}_tool_${i}`)
    const started = performance.now()
    expect(closestNames('y'.repeat(1_000_000), names)).toEqual([])
    expect(closestNames(`${'domain'.repeat(8)}_tool_42`, names)[0]).toBe(`${'domain'.repeat(8)}_tool_42`)
    // A bound, not a speed target: unbounded, the first call would compare 10^6 × 56 cells per name.
    expect(performance.now() - started).toBeLessThan(10_000)
  })
})

describe('unknownBindingMessage', () => {
  it('names the member, the namespace and the closest names', () => {
    expect(unknownBindingMessage('tools', 'list_file', TOOLS)).toBe('tools.list_file is not a function (tools has no "list_file"); did you mean tools.list_files?')
    expect(unknownBindingMessage('tools', 'get_usr', ['set_user', 'get_users', 'get_user'])).toBe(
      'tools.get_usr is not a function (tools has no "get_usr"); did you mean tools.get_user, tools.set_user or tools.get_users?',
    )
    expect(unknownBindingMessage('catalog', 'serch', ['search', 'describe'])).toBe('catalog.serch is not a function (catalog has no "serch"); did you mean catalog.search?')
  })

  it('quotes names that are not identifiers, cuts long ones, and says when the namespace is empty', () => {
    expect(unknownBindingMessage('tools', 'my tool', ['my tool-1'])).toBe('tools["my tool"] is not a function (tools has no "my tool"); did you mean tools["my tool-1"]?')
    const long = unknownBindingMessage('tools', 'x'.repeat(10_000), TOOLS)
    expect(long.length).toBeLessThan(300)
    expect(long).toContain('…')
    expect(unknownBindingMessage('tools', 'anything', [])).toBe('tools.anything is not a function (tools has no "anything"); tools is empty')
  })
})
