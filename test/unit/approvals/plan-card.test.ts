/**
 * The plan card shows what it pre-approves (issue 31, item 3): its line numbers are the
 * plan's (one splitter for JavaScript's line terminators), a line holding a planned call
 * is never cut or left out, and a program whose calls the card cannot all show
 * pre-approves nothing (the request still goes out; Allow grants nothing).
 */
import { describe, expect, it } from 'vitest'
import { layoutPlanCode, MAX_CALL_LINE_CHARS, MAX_CALL_LINES_CHARS, renderApprovalPlan } from '../../../src/approvals/render-plan.js'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { extractPlan } from '../../../src/preflight/plan.js'
import { splitLines } from '../../../src/preflight/line-index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { nextRequest, programResult, runCode, setup } from './helpers.js'

function planSetup() {
  const fixture = setup({ plans: true }, { mode: 'code', codeRuntime: createInProcessRuntime() })
  const asked: PendingApproval[] = []
  fixture.broker.subscribe((event) => {
    if (event.type === 'requested') asked.push(event.approval)
  })
  return { ...fixture, asked }
}

/** Allows every request as it opens; returns what was asked, as `kind:name:n`. */
function allowAll(fixture: ReturnType<typeof planSetup>): () => string[] {
  fixture.broker.subscribe((event) => {
    if (event.type === 'requested') setTimeout(() => fixture.broker.decide(event.approval.id, { decision: 'allow' }), 0)
  })
  return () => fixture.asked.map((a) => `${a.kind}:${a.name}:${String((a.arguments as { n?: unknown } | null)?.n)}`)
}

describe('one line splitter: the card numbers lines as the plan does', () => {
  it.each([
    ['a lone CR', '\r'],
    ['U+2028', '\u2028'],
    ['U+2029', '\u2029'],
    ['CR LF', '\r\n'],
  ])('%s ending a // comment', async (_label, terminator) => {
    const { broker, runtime } = planSetup()
    const code = `// first${terminator}await tools.write_file({ n: 1 }) // second${terminator}return 1`
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, code)
    const request = await asked
    // JavaScript ends the comment at the terminator: the call is on line 2 for the plan and for the card.
    expect(request.plan?.calls).toEqual([{ name: 'write_file', line: 2 }])
    expect(request.summary).toContain('  - write_file (line 2)')
    expect(request.summary).toContain('2 | await tools.write_file({ n: 1 }) // second')
    await broker.decide(request.id, { decision: 'deny' })
    await result
  })

  it('splitLines and the plan agree on every terminator', () => {
    const code = 'a()\rtools.b({})\u2028c()\u2029tools.d({})\r\ntools.e({})\n'
    expect(splitLines(code)).toEqual(['a()', 'tools.b({})', 'c()', 'tools.d({})', 'tools.e({})', ''])
    expect(extractPlan(code).plan.calls.map((c) => [c.name, c.line])).toEqual([['b', 2], ['d', 4], ['e', 5]])
  })
})

describe('the card never cuts a line holding a planned call', () => {
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `const v${i} = ${i} // ${'.'.repeat(60)}`)

  it('a long program shows its start, its end and each planned call line between them', () => {
    const lines = [...filler(40), 'await tools.write_file({ n: 666 })', ...filler(60), 'return 1']
    const layout = layoutPlanCode(lines.join('\n'), [41])
    expect(layout.complete).toBe(true)
    expect(layout.text).toContain('41 | await tools.write_file({ n: 666 })')
    expect(layout.text).toMatch(/… \d+ lines \(\d+–40\) not shown …\n 41 \| await tools/)
  })

  it('a planned call at the end of a long line is shown whole, up to MAX_CALL_LINE_CHARS', () => {
    const line = `const pad = '${'x'.repeat(600)}'; await tools.write_file({ n: 666 })`
    const layout = layoutPlanCode(`await tools.read({})\n${line}\nreturn 1`, [1, 2])
    expect(layout.complete).toBe(true)
    expect(layout.text).toContain('await tools.write_file({ n: 666 })')
  })

  it('a planned-call line over MAX_CALL_LINE_CHARS, or more call lines than MAX_CALL_LINES_CHARS hold, is incomplete and says so', () => {
    const long = `const pad = '${'x'.repeat(MAX_CALL_LINE_CHARS)}'; await tools.write_file({ n: 666 })`
    const cut = layoutPlanCode(long, [1])
    expect(cut.complete).toBe(false)
    expect(cut.text).toContain('1 line with planned calls cannot be shown whole here: nothing is pre-approved')
    const many = Array.from({ length: 200 }, (_, i) => `await tools.write_file({ n: ${i} }) // ${'x'.repeat(40)}`)
    const spread = layoutPlanCode(many.join('\n'), many.map((_, i) => i + 1))
    expect(MAX_CALL_LINES_CHARS).toBeLessThan(many.join('\n').length)
    expect(spread.complete).toBe(false)
    expect(spread.text).toMatch(/\d+ lines with planned calls cannot be shown whole here/)
  })

  it('the rendered plan says nothing is pre-approved when its calls cannot all be shown', () => {
    const text = renderApprovalPlan({ code: `const pad = '${'x'.repeat(2000)}'; await tools.write_file({ n: 666 })`, description: '', calls: [{ name: 'write_file', line: 1, column: 2020 }], asking: [{ name: 'write_file' }], dynamic: false })
    expect(text).toContain('cannot all be shown here, so nothing is pre-approved')
    expect(text).not.toContain('Allow pre-approves')
  })
})

describe('a program whose planned calls cannot all be shown is not pre-approved', () => {
  it('a long program with its write in the middle: the card shows the line, and Allow pre-approves it', async () => {
    const fixture = planSetup()
    const asked = allowAll(fixture)
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `const v${i}_${n} = ${i} // ${'.'.repeat(60)}`)
    const code = [...filler(40), 'await tools.write_file({ n: 666 })', ...filler(41), 'return 1'].join('\n')
    expect(code.length).toBeGreaterThan(3000)
    programResult(await runCode(fixture.runtime, code).result)
    expect(fixture.asked[0]!.summary).toContain('41 | await tools.write_file({ n: 666 })')
    expect(asked()).toEqual(['plan:run_code:undefined'])
  })

  it('a call hidden past the cut of a long line: the request says so, and the write asks on its own', async () => {
    const fixture = planSetup()
    const asked = allowAll(fixture)
    const code = `await tools.write_file({ n: 1 })\nconst pad = '${'x'.repeat(MAX_CALL_LINE_CHARS)}'; await tools.write_file({ n: 666 })\nreturn 1`
    programResult(await runCode(fixture.runtime, code).result)
    const plan = fixture.asked[0]!
    expect(plan).toMatchObject({ kind: 'plan', reason: 'the program calls a tool that asks (and its calls cannot all be shown)', plan: { dynamic: true } })
    expect(plan.summary).toContain('nothing is pre-approved')
    expect(asked()).toEqual(['plan:run_code:undefined', 'call:write_file:1', 'call:write_file:666'])
  })

  it('more call lines than the card holds: Allow grants nothing, each write asks', async () => {
    const fixture = planSetup()
    const asked = allowAll(fixture)
    const code = Array.from({ length: 150 }, (_, i) => `await tools.write_file({ n: ${i} }) // ${'x'.repeat(40)}`).join('\n')
    programResult(await runCode(fixture.runtime, code).result)
    expect(fixture.asked[0]!.plan?.dynamic).toBe(true)
    expect(asked().filter((a) => a.startsWith('call:write_file')).length).toBe(150)
  })
})
