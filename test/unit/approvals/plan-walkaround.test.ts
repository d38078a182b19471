/**
 * Plan approval cannot be walked around (issue 31, item 3): every hostile spelling of the
 * plan-scan table runs end to end — a real registry with `approvalPlans` (the broker's
 * `plans: true`), its gate asking for `write_file`, and QuickJS running the program. A
 * person allows everything but the hidden `write_file({ n: 666 })`: a spelling the scan
 * reads as dynamic pre-approves nothing, so the hidden call (where QuickJS makes it) asks
 * on its own and is denied; a spelling the scan lists shows the call on the card.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { PendingApproval } from '../../../src/approvals/index.js'
import type { CodeRunRequest, CodeRunResult, CodeRuntime } from '../../../src/code-runtime/contract.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { HOSTILE_PYTHON, HOSTILE_SPELLINGS } from '../preflight/plan-hostile-table.js'
import { runCode, setup } from './helpers.js'

const codeRuntime = createQuickJsRuntime()
afterAll(() => codeRuntime.dispose?.())

/** A fixture whose person allows every request but the hidden write's; returns what was asked, in order. */
function person(runtime: CodeRuntime = codeRuntime) {
  const fixture = setup({ plans: true }, { mode: 'code', codeRuntime: runtime })
  const asked: PendingApproval[] = []
  fixture.broker.subscribe((event) => {
    if (event.type !== 'requested') return
    asked.push(event.approval)
    const n = (event.approval.arguments as { n?: unknown } | null)?.n
    setTimeout(() => fixture.broker.decide(event.approval.id, { decision: n === 666 ? 'deny' : 'allow' }), 0)
  })
  return { ...fixture, asked }
}

const nOf = (a: PendingApproval): unknown => (a.arguments as { n?: unknown } | null)?.n

describe('plan approval: hostile spellings pre-approve nothing', () => {
  it.each(HOSTILE_SPELLINGS.filter((s) => s.expect === 'dynamic'))('$label', async ({ code, runs, refused, compiles }) => {
    const { runtime, ran, asked } = person()
    await runCode(runtime, code).result
    await runtime.dispose()
    // The hidden write never ran, whatever the run's outcome.
    expect(ran).not.toContain('write_file:{"n":666}')
    if (refused === true) {
      // The stripper refuses the program before anything runs or asks.
      expect(asked).toEqual([])
      return
    }
    const [plan, ...calls] = asked
    expect(plan).toMatchObject({ kind: 'plan', plan: { dynamic: true } })
    expect(plan!.summary).toContain('nothing is pre-approved')
    // Allow granted nothing: the planned write asked on its own, then (where QuickJS makes it) the hidden one.
    const planned = compiles === false ? [] : ['call:write_file:1']
    expect(calls.map((a) => `${a.kind}:${a.name}:${String(nOf(a))}`)).toEqual([...planned, ...(runs ? ['call:write_file:666'] : [])])
    expect(ran).toEqual(compiles === false ? [] : ['write_file:{"n":1}'])
  })
})

describe('plan approval: hostile spellings the scan lists are on the card', () => {
  it.each(HOSTILE_SPELLINGS.filter((s) => s.expect !== 'dynamic'))('$label', async ({ code, expect: wanted }) => {
    const { runtime, asked } = person()
    await runCode(runtime, code).result
    await runtime.dispose()
    const line = (wanted as { line: number }).line
    const plan = asked[0]!
    expect(plan.kind).toBe('plan')
    expect(plan.plan?.calls).toContainEqual({ name: 'write_file', line })
    // The card shows the line the hidden call is written on, numbered as the plan numbers it.
    expect(plan.summary).toContain(`${line} | ${code.split('\n')[line - 1]}`)
  })
})

/**
 * No Python interpreter ships in this repository, so a stand-in of language `python` makes
 * the calls each hostile program would make: the planned `write_file(n=1)`, then the hidden
 * `write_file(n=666)` its spelling reaches. What is under test is the registry's side.
 */
function pythonStandIn(): CodeRuntime {
  return {
    language: 'python',
    isolation: 'in-process-test',
    capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
    async run(request: CodeRunRequest): Promise<CodeRunResult> {
      const write = request.bindings.find((b) => b.global === 'tools')!.functions.write_file!
      try {
        await write({ n: 1 }, { signal: request.signal ?? new AbortController().signal })
        await write({ n: 666 }, { signal: request.signal ?? new AbortController().signal })
        return { logs: [] }
      } catch (error) {
        return { logs: [], error: { kind: 'exception', message: error instanceof Error ? error.message : String(error) } }
      }
    },
    async dispose() {},
  } as CodeRuntime
}

describe('plan approval: hostile Python spellings pre-approve nothing', () => {
  it.each(HOSTILE_PYTHON)('%s', async (_label, body) => {
    const { runtime, ran, asked } = person(pythonStandIn())
    await runCode(runtime, `await tools.write_file(n=1)\n${body}`).result
    await runtime.dispose()
    expect(asked[0]).toMatchObject({ kind: 'plan', plan: { dynamic: true } })
    expect(asked.slice(1).map((a) => `${a.kind}:${a.name}:${String(nOf(a))}`)).toEqual(['call:write_file:1', 'call:write_file:666'])
    expect(ran).toEqual(['write_file:{"n":1}'])
  })
})
