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
 * Figures are deterministic (fixed data, scripted model); nothing is timed.
 *
 * @module
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base'
import { accountRun, runScriptedTask, type RunAccounting } from '../examples/agent-loop/index.js'
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
