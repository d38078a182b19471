/**
 * A scripted agent loop (`npx tsx examples/agent-loop.ts`): one shop question answered
 * over the demo tools twice, by a scripted model (no network). In native mode the model
 * calls tools step by step and every result re-enters its context; in code mode it sends
 * one `run_code` program and reads back only what the program prints. For each mode this
 * prints every request the loop sends to the model, abbreviated with sizes, then the
 * answers. Token figures: `npx tsx bench/token-economy.bench.ts`.
 *
 * @module
 */
import { accountRun, messageText, runScriptedTask, toolSchemasText, type ChatMessage, type ScriptedTaskRun } from './agent-loop/index.js'

const chars = (text: string): number => text.length
const n = (value: number): string => value.toLocaleString('en-US')

function abbreviate(message: ChatMessage): string {
  const text = messageText(message).replace(/\s+/g, ' ')
  const label = message.role === 'tool' ? `tool ${message.name}${message.isError ? ' (error)' : ''}` : message.role
  const calls = message.role === 'assistant' && message.toolCalls.length > 0 ? ` [${message.toolCalls.length} call${message.toolCalls.length === 1 ? '' : 's'}: ${message.toolCalls.map((c) => c.name).join(', ')}]` : ''
  const preview = text.length > 90 ? `${text.slice(0, 90)}…` : text
  return `${label.padEnd(19)} ${n(chars(messageText(message))).padStart(7)} chars${calls}  ${preview}`
}

function show(run: ScriptedTaskRun): void {
  console.log(`\n════ ${run.mode} mode: ${run.requests.length} requests, ${run.toolCalls} tool call(s) from the model, ${run.executedCalls} executed ════`)
  let seen = 0
  for (const request of run.requests) {
    const history = request.messages.reduce((sum, m) => sum + chars(messageText(m)), 0)
    console.log(`\n── request ${request.index + 1}: tools ${n(chars(toolSchemasText(request.tools)))} chars + ${request.messages.length} messages ${n(history)} chars`)
    request.messages.forEach((message, i) => console.log(`  ${i < seen ? '·' : '+'} ${abbreviate(message)}`))
    seen = request.messages.length
  }
  const final = run.messages[run.messages.length - 1]
  if (final !== undefined) console.log(`\n── the model's answer (${n(chars(final.content))} chars):\n${run.answerText}`)
}

console.log('Each request lists the messages sent to the model: `+` new in that request, `·` re-sent from before.')
const native = await runScriptedTask('native')
show(native)
const code = await runScriptedTask('code')
show(code)

const a = accountRun(native.requests, native.messages, chars)
const b = accountRun(code.requests, code.messages, chars)
console.log('\n════ summary (characters; token figures: npx tsx bench/token-economy.bench.ts) ════')
console.log(`tool results entering the context: native ${n(a.toolResults)} chars, code ${n(b.toolResults)} chars`)
console.log(`all input over the loop (prefix once): native ${n(a.inputTotal)} chars, code ${n(b.inputTotal)} chars`)
console.log(`answers match: ${native.answerText === code.answerText ? 'yes' : 'NO'}`)
if (native.answerText !== code.answerText) process.exitCode = 1
