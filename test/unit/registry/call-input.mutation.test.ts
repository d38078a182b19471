/**
 * A malformed execution input, as `execute()` receives it from an integrator: each
 * refusal is an `INVALID_EXECUTION` result with its own message (never a throw), and the
 * parsed input keeps whichever of `callId` and `name` were strings for the events.
 */
import { describe, expect, it } from 'vitest'
import { parseInput } from '../../../src/registry/call.js'
import { createToolRuntime } from '../../../src/registry/index.js'

const signal = new AbortController().signal

const CASES: ReadonlyArray<readonly [string, unknown, string]> = [
  ['null', null, 'the execution input must be an object'],
  ['a string', 'call', 'the execution input must be an object'],
  ['a number callId', { callId: 1, name: 'n', signal }, 'the execution input needs a string callId'],
  ['a number name', { callId: 'c', name: 2, signal }, 'the execution input needs a string name'],
  ['no signal', { callId: 'c', name: 'n' }, 'the execution input needs an AbortSignal as signal'],
  ['a number agent', { callId: 'c', name: 'n', signal, agent: 1 }, 'the execution input agent must be a string'],
  ['a string parent', { callId: 'c', name: 'n', signal, parent: 'p' }, 'the execution input parent must be an execution token'],
  ['an infinite deadline', { callId: 'c', name: 'n', signal, deadline: Number.POSITIVE_INFINITY }, 'the execution input deadline must be a finite number (epoch ms)'],
  ['a string deadline', { callId: 'c', name: 'n', signal, deadline: '1' }, 'the execution input deadline must be a finite number (epoch ms)'],
  ['a hold that is not a function', { callId: 'c', name: 'n', signal, holdWallClock: 1 }, 'the execution input holdWallClock must be a function'],
  ['an approval that is not a function', { callId: 'c', name: 'n', signal, approval: 'yes' }, 'the execution input approval must be a function'],
  [
    'a throwing getter',
    {
      get callId(): string {
        throw new Error('boom')
      },
    },
    'the execution input could not be read: boom',
  ],
  [
    'a throwing getter whose error has no message',
    {
      get callId(): string {
        throw Object.assign(new Error(''), { name: 'Weird' })
      },
    },
    'the execution input could not be read: Weird',
  ],
]

describe('a malformed execution input', () => {
  it.each(CASES)('%s: INVALID_EXECUTION with its message', async (_label, input, message) => {
    const result = await createToolRuntime().execute(input as never)
    expect(result.isError).toBe(true)
    expect(result.isError && result.error).toEqual({ message, info: { name: 'ToolError', code: 'INVALID_EXECUTION' } })
    expect(parseInput(input)).toMatchObject({ ok: false, message })
  })

  it('keeps callId and name when they are strings, and only then', () => {
    expect(parseInput({ callId: 'c', name: 2, signal })).toMatchObject({ ok: false, callId: 'c', name: '' })
    expect(parseInput({ callId: 1, name: 'n', signal })).toMatchObject({ ok: false, callId: '', name: 'n' })
    expect(parseInput({ callId: 'c', name: 'n' })).toMatchObject({ ok: false, callId: 'c', name: 'n' })
    expect(parseInput(null)).toMatchObject({ ok: false, callId: '', name: '' })
  })

  it('accepts each optional member when it is of its type', () => {
    const parent = Symbol('token')
    const hold = () => () => {}
    const approval = () => ({ decision: 'allow' as const })
    const parsed = parseInput({ callId: 'c', name: 'n', signal, agent: 'a', parent, deadline: 5, holdWallClock: hold, approval, arguments: { x: 1 } })
    expect(parsed).toMatchObject({ ok: true, message: '', callId: 'c', name: 'n', signal, agent: 'a', parent, deadline: 5, holdWallClock: hold, approval, args: { x: 1 } })
  })
})
