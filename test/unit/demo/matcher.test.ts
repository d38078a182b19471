/**
 * The demo tools' linear-time matchers (demo/tools/matcher.ts): the same answers as
 * JavaScript's RegExp (for the regex subset) and as the former glob → RegExp translation
 * (for globs), and work that grows linearly with the text whatever the pattern. The
 * pathological cases used to hold the thread for seconds to hours (issue 19, finding 2).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ToolArgsError, ToolError } from '../../../src/errors.js'
import { compileGlob, compileRegex, createDemoTools, GREP_WORK_BUDGET, MAX_PATTERN_LENGTH, workBudget } from '../../../demo/tools/index.js'
import { call } from './helpers.js'

/** The demo's former glob translation (backtracking RegExp): the oracle for ordinary globs. */
function oldGlobToRegExp(pattern: string): RegExp {
  let source = ''
  let braces = 0
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        const slash = pattern[i + 2] === '/'
        source += slash ? '(?:.*/)?' : '.*'
        i += slash ? 2 : 1
      } else source += '[^/]*'
    } else if (ch === '?') source += '[^/]'
    else if (ch === '{') {
      braces++
      source += '(?:'
    } else if (ch === '}' && braces > 0) {
      braces--
      source += ')'
    } else if (ch === ',' && braces > 0) source += '|'
    else source += ch.replace(/[.+^$()|[\]\\]/g, '\\$&')
  }
  source += ')'.repeat(braces)
  return new RegExp(`^${source}$`)
}

const budget = () => workBudget(1e9, 'test')

/** Steps a matcher spends on one text. */
function steps(compile: (b: ReturnType<typeof workBudget>) => { test(text: string): boolean }, text: string): number {
  const b = budget()
  compile(b).test(text)
  return 1e9 - b.remaining
}

// A small regex grammar over a two-letter alphabet: every construct of the subset.
const atom: fc.Arbitrary<string> = fc.constantFrom('a', 'b', '.', '[ab]', '[^a]', '\\w', '\\s', '\\d', 'A', '[a-b]', '\\.', '-')
const regex: fc.Arbitrary<string> = fc.letrec<{ re: string }>((tie) => ({
  re: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    fc.tuple(tie('re'), tie('re')).map(([x, y]) => `${x}${y}`),
    fc.tuple(tie('re'), tie('re')).map(([x, y]) => `(?:${x}|${y})`),
    fc.tuple(tie('re'), fc.constantFrom('*', '+', '?', '{2}', '{1,3}', '{0,}', '*?', '+?')).map(([x, q]) => `(${x})${q}`),
    fc.tuple(fc.constantFrom('^', '\\b', '\\B'), tie('re')).map(([a, x]) => `${a}${x}`),
    fc.tuple(tie('re'), fc.constantFrom('$', '\\b')).map(([x, a]) => `${x}${a}`),
  ),
})).re

describe('compileRegex: the same lines as RegExp for the supported subset', () => {
  it('agrees with RegExp on generated patterns and lines (case-sensitive and not)', () => {
    fc.assert(
      fc.property(regex, fc.string({ unit: fc.constantFrom('a', 'b', 'A', ' ', '-', '1', '.'), maxLength: 12 }), fc.boolean(), (pattern, line, ignoreCase) => {
        const expected = new RegExp(pattern, ignoreCase ? 'i' : '').test(line)
        expect(compileRegex(pattern, { ignoreCase }, budget()).test(line), `${pattern} on ${JSON.stringify(line)}`).toBe(expected)
      }),
      { numRuns: 3000 },
    )
  })

  it.each([
    ['^export (async )?function', 'export async function f() {}', true],
    ['TODO|FIXME', '  // FIXME later', true],
    ['\\bid\\b', 'const idx = 1', false],
    ['\\bid\\b', 'return id', true],
    ['[A-Z][a-z]+Store', 'interface NoteStore {', true],
    ['\\d{2,3}-\\d{4}', 'call 555-1234', true],
    ['\\x41\\u0042\\t', 'AB\t', true],
    ['[\\]\\-]x', ']x', true],
    ['(?<word>\\w+)=', 'key=value', true],
    ['a{,2}', 'a{,2}', true],
    ['[]', 'anything', false],
    ['[^]', 'x', true],
  ] as const)('%s on %j → %s (as RegExp says)', (pattern, line, expected) => {
    expect(new RegExp(pattern).test(line)).toBe(expected)
    expect(compileRegex(pattern, {}, budget()).test(line)).toBe(expected)
  })

  it.each([
    ['(a)\\1', /backreferences are not supported/],
    ['(?<n>a)\\k<n>', /backreferences are not supported/],
    ['a(?=b)', /lookahead and lookbehind are not supported/],
    ['(?<!a)b', /lookahead and lookbehind are not supported/],
    ['\\p{L}', /Unicode property escapes are not supported/],
    ['(', /unterminated group/],
    ['a)', /unmatched "\)"/],
    ['*a', /nothing to repeat/],
    ['a**', /nothing to repeat/],
    ['[a', /unterminated character class/],
    ['[z-a]', /range out of order/],
    ['a{3,1}', /numbers out of order/],
    ['\\q', /unknown escape/],
    ['(?:(?:a{1000}){1000})', /too complex/],
    ['a'.repeat(MAX_PATTERN_LENGTH + 1), /too long/],
  ])('refuses %s with INVALID_ARGS at /pattern, naming why', (pattern, message) => {
    let error: unknown
    try {
      compileRegex(pattern, {}, budget())
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ToolArgsError)
    expect((error as ToolArgsError).message).toMatch(/\/pattern/)
    expect((error as ToolArgsError).message).toMatch(message)
  })
})

describe('compileGlob: the same paths as the former translation', () => {
  it('agrees with the old RegExp on generated globs and paths', () => {
    const glob = fc.array(fc.constantFrom('a', 'b', '/', '*', '**', '**/', '?', '{', '}', ',', '.', '{a,b}', '{*,b/}'), { maxLength: 8 }).map((parts) => parts.join(''))
    const path = fc.array(fc.constantFrom('a', 'b', '/', '.', 'ab/', ','), { maxLength: 8 }).map((parts) => parts.join(''))
    fc.assert(
      fc.property(glob, path, (pattern, text) => {
        expect(compileGlob(pattern, budget()).test(text), `${pattern} on ${text}`).toBe(oldGlobToRegExp(pattern).test(text))
      }),
      { numRuns: 3000 },
    )
  })
})

describe('work grows linearly with the text, whatever the pattern', () => {
  const regexes = ['(a+)+$', '(a|a)*b', '(a*)*b', '^(a|aa)+$', '(x+x+)+y', '(.*a){12}']
  it.each(regexes)('regex %s: twice the text costs at most about twice the steps', (pattern) => {
    const one = steps((b) => compileRegex(pattern, {}, b), `${'a'.repeat(20_000)}!`)
    const two = steps((b) => compileRegex(pattern, {}, b), `${'a'.repeat(40_000)}!`)
    expect(two).toBeLessThanOrEqual(2 * one + 1000)
    // And a small constant per character: the pattern's size bounds it, not the text.
    expect(one / 20_000).toBeLessThan(200)
  })

  it.each([
    ['{*,*} thirty times', `${'{*,*}'.repeat(30)}x`, 'a'.repeat(4_000)],
    ['**/ twenty times', `${'**/'.repeat(20)}x`, 'a/'.repeat(2_000)],
    ['* forty times', `${'*'.repeat(40)}x`, 'a'.repeat(4_000)],
  ])('glob %s: twice the path costs at most about twice the steps', (_what, pattern, text) => {
    const one = steps((b) => compileGlob(pattern, b), text)
    const two = steps((b) => compileGlob(pattern, b), text + text)
    expect(two).toBeLessThanOrEqual(2 * one + 1000)
  })

  it('a spent budget ends the search with a clear TOOL_FAILED, not a stall', () => {
    const b = workBudget(10_000, 'grep')
    const m = compileRegex('(a|a)*b', {}, b)
    expect(() => m.test('a'.repeat(100_000))).toThrow(ToolError)
    expect(() => m.test('a')).toThrow(/grep stopped: the search needed more than its work budget of 10000 steps/)
  })
})

describe('the grep and glob tools on a large workspace file', () => {
  // 2 MB of text on ~20,000 lines, plus one 200,000-character line.
  const big = `${Array.from({ length: 20_000 }, (_, i) => `${'a'.repeat(90)} line ${i}`).join('\n')}\n${'a'.repeat(200_000)}\n`
  const fresh = () => createDemoTools({ include: ['workspace'], files: { 'big.txt': big, 'src/a.ts': 'export const a = 1\n', [`${'a/'.repeat(200)}f.ts`]: 'x\n' } })

  it.each(['(a+)+$', '(a|a)*b', '(a*)*b'])('grep regex %s answers (matches or a budget error), never backtracks', async (pattern) => {
    const { tools } = fresh()
    const outcome = await call(tools, 'grep', { pattern, regex: true }).then(
      (r) => r.value as { total: number },
      (e: unknown) => e,
    )
    if (outcome instanceof ToolError) expect(outcome.message).toMatch(new RegExp(`work budget of ${GREP_WORK_BUDGET} steps`))
    else expect(outcome).toMatchObject({ total: expect.any(Number) })
  })

  it('grep regex over a 200 KB file finds the same lines as RegExp', async () => {
    const text = Array.from({ length: 2_000 }, (_, i) => `${'a'.repeat(90)} line ${i}`).join('\n')
    const { tools } = createDemoTools({ include: ['workspace'], files: { 'mid.txt': text, 'other.md': 'line 1990' } })
    const found = (await call(tools, 'grep', { pattern: 'line 19\\d0$', regex: true, glob: '*.txt' })).value as { total: number }
    expect(found.total).toBe(text.split('\n').filter((l) => /line 19\d0$/.test(l)).length)
    expect(found.total).toBe(10)
  })

  it.each([
    ['{*,*} repeated 30 times', `${'{*,*}'.repeat(30)}.ts`],
    ['**/ repeated 40 times', `${'**/'.repeat(40)}*.ts`],
  ])('glob %s answers', async (_what, pattern) => {
    const { tools } = fresh()
    const { value } = await call(tools, 'glob', { pattern })
    expect(value).toMatchObject({ total: expect.any(Number) })
    const grep = await call(tools, 'grep', { pattern: 'export', glob: pattern })
    expect(grep.value).toMatchObject({ total: expect.any(Number) })
  })

  it('a glob longer than the cap is refused at /glob (grep) and /pattern (glob)', async () => {
    const { tools } = fresh()
    const long = '*'.repeat(MAX_PATTERN_LENGTH + 1)
    await expect(call(tools, 'grep', { pattern: 'x', glob: long })).rejects.toThrow(/\/glob: the pattern is too long/)
    await expect(call(tools, 'glob', { pattern: long })).rejects.toThrow(/\/pattern: the pattern is too long/)
  })
})
