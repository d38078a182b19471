/**
 * Token economy (`npx tsx bench/token-economy.bench.ts`): the scripted agent loop of
 * `examples/agent-loop/` answers one multi-step shop question over the demo tools in
 * native mode and in code mode; every request the loop sends is tokenized with a real
 * tokenizer (gpt-tokenizer, o200k_base — GPT-4o / GPT-4.1 / GPT-5 / o-series).
 *
 * Accounting (see examples/agent-loop/accounting.ts):
 * - prefix = the wire tool schemas (JSON) + the system message (instructions + the
 *   runtime's prompt sections; in code mode these carry the generated SDK);
 * - each message counts as its role line + content (+ each tool call's name and JSON
 *   arguments for assistant turns: the `run_code` program is model output, then input);
 * - (a) input over the loop = prefix once + Σ over requests of the accumulated history;
 *   (a, uncached) = Σ over requests of prefix + history (no prompt caching);
 * - (b) tool-result tokens = every tool message counted once, as it enters the context;
 *   (b, re-read) = tool messages summed over every request that carries them.
 *
 * Then the same task in code mode over a large registry: the demo tools plus the 1,000
 * generated tools of test/fixtures/large-registry.ts, once with the full SDK in the
 * prompt (`sdkBudgetChars: Infinity`) and once within the default budget (the catalog
 * form: the scripted model finds its tools with `catalog.search`, then runs the task).
 * Targets: that registry presents in ≤ 2,500 prompt tokens, and the task's input stays
 * within 10 % of the demo registry's.
 *
 * Figures are deterministic (fixed data, scripted model); nothing is timed.
 *
 * @module
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base'
import { accountRun, declaredNames, runScriptedTask, type RunAccounting, type ScriptedTaskRun } from '../examples/agent-loop/index.js'
import { LARGE_REGISTRY } from '../test/fixtures/large-registry.js'
import { largeRegistryDefinition } from '../test/support/large-registry-tools.js'
import { printTable, type TableRow } from './_stats.js'

const native = await runScriptedTask('native')
const code = await runScriptedTask('code')
if (native.answerText !== code.answerText) {
  console.error('the two modes gave different answers:\n--- native\n' + native.answerText + '\n--- code\n' + code.answerText)
  process.exit(1)
}

const tokens = { native: accountRun(native.requests, native.messages, countTokens), code: accountRun(code.requests, code.messages, countTokens) }
const cl100k = { native: accountRun(native.requests, native.messages, countCl100k), code: accountRun(code.requests, code.messages, countCl100k) }

/** Integers as strings: the shared table printer would give small numbers decimals. */
const n = (value: number): string => value.toLocaleString('en-US')
const reduction = (from: number, to: number): string => `${(((from - to) / from) * 100).toFixed(1)} %`
/** `-97.7 %` for a reduction, `x2.3` for an increase. */
const change = (from: number, to: number): string =>
  from === 0 ? 'n/a' : to <= from ? `-${reduction(from, to)}` : `x${(to / from).toFixed(1)}`
const row = (metric: string, pick: (a: RunAccounting) => number): TableRow => {
  const a = pick(tokens.native)
  const b = pick(tokens.code)
  return { metric, native: n(a), code: n(b), 'code vs native': change(a, b) }
}

console.log('question:', native.messages[1]?.content)
console.log(`\nanswer (identical in both modes):\n${native.answerText}`)

printTable(
  [
    { metric: 'requests to the model', native: n(native.requests.length), code: n(code.requests.length) },
    { metric: 'tool calls the model emitted', native: n(native.toolCalls), code: n(code.toolCalls) },
    { metric: 'tool calls executed (code: sub-calls)', native: n(native.executedCalls), code: n(code.executedCalls) },
  ],
  'The loop',
)

printTable(
  [
    row('tool schemas (per request)', (r) => r.toolSchemas),
    row('system message (per request)', (r) => r.system),
    row('(b) tool results, each once', (r) => r.toolResults),
    row('(b) tool results, re-read per request', (r) => r.toolResultsReread),
    row('(a) input over the loop, prefix once', (r) => r.inputTotal),
    row('(a) input over the loop, uncached', (r) => r.inputTotalUncached),
    row('model output (turns + calls/program)', (r) => r.output),
  ],
  'Tokens (o200k_base)',
)

const perRequest = (label: string, accounting: RunAccounting): TableRow[] =>
  accounting.perRequest.map((r) => ({
    mode: label,
    request: n(r.index + 1),
    messages: n(r.messages),
    'prefix tokens': n(accounting.toolSchemas + accounting.system),
    'history tokens': n(r.history),
    'of which tool results': n(r.toolResults),
  }))
printTable([...perRequest('native', tokens.native), ...perRequest('code', tokens.code)], 'Per request (o200k_base)')

printTable(
  [
    { metric: '(b) tool results, each once', native: n(cl100k.native.toolResults), code: n(cl100k.code.toolResults), 'code vs native': change(cl100k.native.toolResults, cl100k.code.toolResults) },
    { metric: '(a) input over the loop, prefix once', native: n(cl100k.native.inputTotal), code: n(cl100k.code.inputTotal), 'code vs native': change(cl100k.native.inputTotal, cl100k.code.inputTotal) },
  ],
  'Cross-check with cl100k_base (GPT-4 / GPT-3.5)',
)

const b = ((tokens.native.toolResults - tokens.code.toolResults) / tokens.native.toolResults) * 100
console.log(`\n(b) tool-result tokens: ${b.toFixed(1)} % fewer in code mode (target ≥ 90 %: ${b >= 90 ? 'met' : 'NOT met'})`)
console.log(`(a) total input tokens, prefix once: ${reduction(tokens.native.inputTotal, tokens.code.inputTotal)} fewer; uncached: ${reduction(tokens.native.inputTotalUncached, tokens.code.inputTotalUncached)} fewer`)

// ── A large registry: the same task over the demo tools + 1,000 generated ones ──

const extraTools = LARGE_REGISTRY.map((tool) => largeRegistryDefinition(tool))
const largeFull = await runScriptedTask('code', { extraTools, sdkBudgetChars: Number.POSITIVE_INFINITY })
const largeBudgeted = await runScriptedTask('code', { extraTools })
for (const run of [largeFull, largeBudgeted]) {
  if (run.answerText !== code.answerText) {
    console.error(`the large-registry run (${run.sdkForm} SDK) gave another answer:\n${run.answerText}`)
    process.exit(1)
  }
}
const discovery = largeBudgeted.messages.find((m) => m.role === 'tool')
const found = discovery === undefined ? [] : declaredNames(discovery.content)

const large = { full: accountRun(largeFull.requests, largeFull.messages, countTokens), budgeted: accountRun(largeBudgeted.requests, largeBudgeted.messages, countTokens) }
const prompt = (a: RunAccounting): number => a.toolSchemas + a.system
const versus = (a: RunAccounting): string => {
  const delta = ((a.inputTotal - tokens.code.inputTotal) / tokens.code.inputTotal) * 100
  return `${delta >= 0 ? '+' : ''}${delta.toFixed(1)} %`
}
const scenario = (label: string, run: ScriptedTaskRun, a: RunAccounting): TableRow => ({
  registry: label,
  tools: n(run.tools),
  'SDK in the prompt': run.sdkForm === 'catalog' ? 'catalog form' : 'full SDK',
  requests: n(run.requests.length),
  'prompt tokens': n(prompt(a)),
  '(a) input, prefix once': n(a.inputTotal),
  'vs demo registry': versus(a),
  '(a) input, uncached': n(a.inputTotalUncached),
})
printTable(
  [
    scenario('demo tools', code, tokens.code),
    scenario('demo + 1,000 generated', largeFull, large.full),
    scenario('demo + 1,000 generated', largeBudgeted, large.budgeted),
  ],
  'Code mode over a large registry (o200k_base; prompt = wire tool schemas + system message)',
)
console.log(`\nthe budgeted run found via catalog.search: ${found.join(', ')}; then ran the task program (${largeBudgeted.executedCalls} sub-calls) and gave the same answer`)
const promptMet = prompt(large.budgeted) <= 2_500
const inputRatio = large.budgeted.inputTotal / tokens.code.inputTotal
console.log(`large registry, prompt tokens: ${n(prompt(large.budgeted))} (target ≤ 2,500: ${promptMet ? 'met' : 'NOT met'}); full SDK: ${n(prompt(large.full))}`)
console.log(
  `large registry, (a) input over the task: ${n(large.budgeted.inputTotal)} vs ${n(tokens.code.inputTotal)} for the demo tools, ${versus(large.budgeted)} (target within 10 %: ${Math.abs(inputRatio - 1) <= 0.1 ? 'met' : 'NOT met'}); full SDK: ${n(large.full.inputTotal)}`,
)
