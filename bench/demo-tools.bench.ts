/**
 * `npm run bench -- demo-tools`: what the demo's `grep` and `glob` cost the host's thread
 * now that they match in linear time (demo/tools/matcher.ts), next to what JavaScript's
 * backtracking `RegExp` (the former implementation) costs on the same pathological
 * patterns at sizes small enough to finish. Figures are printed, never asserted.
 *
 * @module
 */
import { compileGlob, compileRegex, createDemoTools, GREP_WORK_BUDGET, workBudget } from '../demo/tools/index.js'
import type { AnyToolDefinition } from '../src/types.js'

function ms(run: () => unknown): number {
  const start = performance.now()
  run()
  return performance.now() - start
}

function best(run: () => unknown, times = 3): number {
  return Math.min(...Array.from({ length: times }, () => ms(run)))
}

async function toolMs(tools: readonly AnyToolDefinition[], name: string, args: unknown): Promise<{ ms: number; outcome: string }> {
  const tool = tools.find((t) => t.name === name)!
  const start = performance.now()
  let outcome: string
  try {
    const value = (await tool.execute(tool.validateArgs!(args as never), { signal: new AbortController().signal } as never)) as { total?: number }
    outcome = `${value.total} matches`
  } catch (error) {
    outcome = (error as Error).message.slice(0, 60)
  }
  return { ms: performance.now() - start, outcome }
}

const line = (label: string, value: string): void => console.log(`  ${label.padEnd(58)} ${value}`)

console.log('Old: a backtracking RegExp (the former implementation), sizes that finish')
for (const n of [20, 22, 24]) line(`RegExp /(a+)+$/ on ${n} × "a" + "!"`, `${best(() => /(a+)+$/.test(`${'a'.repeat(n)}!`), 1).toFixed(1)} ms`)
for (const k of [4, 5, 6]) {
  const old = new RegExp(`^${'(?:[^/]*|[^/]*)'.repeat(k)}x$`)
  line(`glob {*,*}×${k} as RegExp on a 20-character path`, `${best(() => old.test('a'.repeat(20)), 1).toFixed(1)} ms`)
}

console.log('New: the linear-time matcher')
const big = 'a'.repeat(200_000)
for (const pattern of ['(a+)+$', '(a|a)*b', '(a*)*b']) {
  line(`regex ${pattern} on a 200,000-character line`, `${best(() => compileRegex(pattern, {}, workBudget(1e9, 'bench')).test(`${big}!`)).toFixed(1)} ms`)
}
line('glob {*,*}×30 on a 4,000-character path', `${best(() => compileGlob(`${'{*,*}'.repeat(30)}x`, workBudget(1e9, 'bench')).test('a'.repeat(4_000))).toFixed(1)} ms`)
line('glob **/×40 on a 4,000-character path', `${best(() => compileGlob(`${'**/'.repeat(40)}x`, workBudget(1e9, 'bench')).test('a/'.repeat(2_000))).toFixed(1)} ms`)

console.log('The grep tool (the host thread is held for the whole call)')
const files = { 'big.txt': `${Array.from({ length: 20_000 }, (_, i) => `${'a'.repeat(90)} line ${i}`).join('\n')}\n` }
const { tools } = createDemoTools({ include: ['workspace'], files })
for (const pattern of ['(a|a)*b', 'line 1999\\d$']) {
  const { ms: took, outcome } = await toolMs(tools, 'grep', { pattern, regex: true })
  line(`grep regex ${pattern} over 2 MB (budget ${GREP_WORK_BUDGET} steps)`, `${took.toFixed(1)} ms (${outcome})`)
}
const seed = createDemoTools({ include: ['workspace'] }).tools
const typical = await toolMs(seed, 'grep', { pattern: '^export (async )?function', regex: true, glob: 'src/**/*.ts' })
line('grep regex ^export (async )?function over the seed workspace', `${typical.ms.toFixed(2)} ms (${typical.outcome})`)
