/**
 * A person's decision body, read strictly (src/approvals/decision.ts; issue 38 item 4): every
 * refusal with its exact text, the reason's bound at its edge, and bodies that would run code
 * if read carelessly (accessors, proxies) refused without running it.
 */
import { describe, expect, it } from 'vitest'
import { MAX_APPROVAL_REASON_LENGTH, parseDecision } from '../../../src/approvals/decision.js'

const refused = (message: string) => ({ ok: false, message })

describe('parseDecision', () => {
  it('reads allow and deny, with or without a reason; an undefined reason is absent; the value is frozen', () => {
    for (const decision of ['allow', 'deny'] as const) {
      const plain = parseDecision({ decision })
      expect(plain).toEqual({ ok: true, value: { decision } })
      expect(Object.keys((plain as { value: object }).value)).toEqual(['decision'])
      expect(Object.isFrozen((plain as { value: object }).value)).toBe(true)
      expect(parseDecision({ decision, reason: undefined })).toEqual({ ok: true, value: { decision } })
      const reasoned = parseDecision({ decision, reason: 'ok' })
      expect(reasoned).toEqual({ ok: true, value: { decision, reason: 'ok' } })
      expect(Object.isFrozen((reasoned as { value: object }).value)).toBe(true)
    }
    expect(parseDecision(Object.assign(Object.create(null), { decision: 'deny', reason: '' }))).toEqual({ ok: true, value: { decision: 'deny', reason: '' } })
  })

  it('a body that is not an object: named by what it is', () => {
    const text = (got: string) => refused(`the decision must be an object { decision, reason? } (got ${got})`)
    expect(parseDecision(undefined)).toEqual(text('undefined'))
    expect(parseDecision(null)).toEqual(text('null'))
    expect(parseDecision([])).toEqual(text('an array'))
    expect(parseDecision('allow')).toEqual(text('"allow"'))
    expect(parseDecision(7)).toEqual(text('7'))
    expect(parseDecision(true)).toEqual(text('true'))
    expect(parseDecision(() => 'allow')).toEqual(text('function'))
    // A long string is cut at 40 characters.
    expect(parseDecision('x'.repeat(40))).toEqual(text(JSON.stringify('x'.repeat(40))))
    expect(parseDecision('x'.repeat(41))).toEqual(text(JSON.stringify(`${'x'.repeat(40)}…`)))
  })

  it('an object of another class, an unknown field, a decision that is not allow or deny', () => {
    expect(parseDecision(new (class Decision {
      decision = 'allow'
    })())).toEqual(refused('the decision must be a plain object'))
    expect(parseDecision(new Map())).toEqual(refused('the decision must be a plain object'))
    expect(parseDecision({ decision: 'allow', by: 'me' })).toEqual(refused('unknown field "by" (allowed: decision, reason)'))
    expect(parseDecision({})).toEqual(refused('"decision" must be "allow" or "deny" (got undefined)'))
    expect(parseDecision({ decision: 'Allow' })).toEqual(refused('"decision" must be "allow" or "deny" (got "Allow")'))
    expect(parseDecision({ decision: null })).toEqual(refused('"decision" must be "allow" or "deny" (got null)'))
    expect(parseDecision({ decision: ['allow'] })).toEqual(refused('"decision" must be "allow" or "deny" (got an array)'))
    expect(parseDecision({ decision: 1 })).toEqual(refused('"decision" must be "allow" or "deny" (got 1)'))
    expect(parseDecision({ decision: false })).toEqual(refused('"decision" must be "allow" or "deny" (got false)'))
    expect(parseDecision({ decision: {} })).toEqual(refused('"decision" must be "allow" or "deny" (got object)'))
  })

  it('a reason that is not a string, or longer than MAX_APPROVAL_REASON_LENGTH characters', () => {
    expect(MAX_APPROVAL_REASON_LENGTH).toBe(2000)
    expect(parseDecision({ decision: 'deny', reason: 3 })).toEqual(refused('"reason" must be a string (got 3)'))
    expect(parseDecision({ decision: 'deny', reason: null })).toEqual(refused('"reason" must be a string (got null)'))
    const edge = 'r'.repeat(MAX_APPROVAL_REASON_LENGTH)
    expect(parseDecision({ decision: 'deny', reason: edge })).toEqual({ ok: true, value: { decision: 'deny', reason: edge } })
    expect(parseDecision({ decision: 'deny', reason: `${edge}r` })).toEqual(refused(`"reason" is too long (2001 characters; at most 2000)`))
  })

  it('accessors are refused unrun; a body that throws while inspected is refused without reading what it threw', () => {
    let ran = 0
    const getter = (key: string) => Object.defineProperty({}, key, { enumerable: true, get: () => (ran++, 'allow') })
    expect(parseDecision(getter('decision'))).toEqual(refused('"decision" must be a plain data property, not an accessor'))
    expect(parseDecision(Object.defineProperty({ decision: 'deny' }, 'reason', { enumerable: true, get: () => (ran++, 'why') }))).toEqual(refused('"reason" must be a plain data property, not an accessor'))
    expect(ran).toBe(0)
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf: () => {
          throw { get message() { return (ran++, 'boom') } }
        },
      },
    )
    expect(parseDecision(hostile)).toEqual(refused('the decision could not be read (inspecting it threw)'))
    expect(ran).toBe(0)
    // A non-enumerable field is not a field of the body: only own enumerable keys count.
    expect(parseDecision(Object.defineProperty({ decision: 'allow' }, 'extra', { value: 1, enumerable: false }))).toEqual({ ok: true, value: { decision: 'allow' } })
  })
})
