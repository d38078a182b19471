/**
 * The plan scan against spellings an attacker would write (issue 31, item 3): each hides a
 * `write_file` call from a plain reading, so each must either make the plan `dynamic`
 * (nothing pre-approved) or list the call. The table is shared with the end-to-end suite
 * (test/unit/approvals/plan-walkaround.test.ts), which runs every spelling in QuickJS.
 */
import { describe, expect, it } from 'vitest'
import { extractPlan, extractPythonPlan } from '../../../src/preflight/plan.js'
import { HOSTILE_PYTHON, HOSTILE_SPELLINGS, STILL_STATIC } from './plan-hostile-table.js'

describe('plan scan: hostile spellings fail closed', () => {
  it('has at least 25 JavaScript spellings', () => {
    expect(HOSTILE_SPELLINGS.length).toBeGreaterThanOrEqual(25)
  })

  it.each(HOSTILE_SPELLINGS)('$label', ({ code, expect: wanted, refused }) => {
    const { plan, refusal } = extractPlan(code)
    expect(refusal?.code).toBe(refused === true ? 'SYNTAX' : undefined)
    if (wanted === 'dynamic') expect(plan.dynamic).toBe(true)
    // A listed spelling names the hidden call at its own line.
    else expect(plan.calls.filter((c) => c.name === 'write_file').map((c) => c.line)).toContain(wanted.line)
  })
})

describe('plan scan: what stays static', () => {
  it.each(STILL_STATIC)('$label', ({ code, calls }) => {
    const { plan } = extractPlan(code)
    expect(plan).toEqual({ calls: expect.any(Array), dynamic: false })
    expect(plan.calls.map((c) => c.name)).toEqual(calls)
  })
})

describe('plan scan: Python fails closed', () => {
  it.each(HOSTILE_PYTHON)('%s', (_label, code) => {
    expect(extractPythonPlan(code).plan.dynamic).toBe(true)
  })

  it('a plain program stays static, with its calls', () => {
    expect(extractPythonPlan("r = await tools.read_file(path='a')\nawait tools.write_file(path='b', content=r)").plan).toEqual({
      calls: [{ name: 'read_file', line: 1, column: 17 }, { name: 'write_file', line: 2, column: 13 }],
      dynamic: false,
    })
  })
})
