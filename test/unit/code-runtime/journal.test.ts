/**
 * The journal's own pieces (src/code-runtime/journal.ts), apart from the parking suites
 * that drive them end to end on real VMs: the call key (its hash and its label), the
 * shape checks a parked state from a store must pass before anything replays it, and the
 * size that decides whether a run may still park.
 */
import { describe, expect, it } from 'vitest'
import { callKey, isParkedRunState, isParkedVm, journalChars, MAX_JOURNAL_CHARS, newJournal, READ_CODES } from '../../../src/code-runtime/journal.js'
import type { ParkedRunState, ParkedVm } from '../../../src/code-runtime/journal.js'

/** FNV-1a, 32 bits, as base 36: the reference the key's hash must equal. */
const fnv = (text: string): string => {
  let hash = 0x811c9dc5
  for (const unit of text.split('').map((c) => c.charCodeAt(0))) hash = Math.imul(hash ^ unit, 0x01000193)
  return (hash >>> 0).toString(36)
}

const call = (global: string, name: string, args: unknown, id = 1) => JSON.stringify({ type: 'call', id, global, name, args })

describe('callKey', () => {
  it('hashes the whole message with 32-bit FNV-1a (the published vectors) and labels it by binding', () => {
    // FNV-1a 32 of "" is the offset basis; of "a" 0xe40c292c; of "foobar" 0xbf9cf968.
    expect(callKey('')).toBe(`call#${(0x811c9dc5).toString(36)}`)
    expect(callKey('a')).toBe(`call#${(0xe40c292c).toString(36)}`)
    expect(callKey('foobar')).toBe(`call#${(0xbf9cf968).toString(36)}`)
    const json = call('tools', 'read_file', { path: 'a.md' })
    expect(callKey(json)).toBe(`tools.read_file#${fnv(json)}`)
  })

  it('differs when anything of the message differs, and is the same for the same message', () => {
    const key = callKey(call('tools', 'pay', { cents: 5 }))
    expect(callKey(call('tools', 'pay', { cents: 5 }))).toBe(key)
    expect(callKey(call('tools', 'pay', { cents: 6 }))).not.toBe(key)
    expect(callKey(call('tools', 'pay', { cents: 5 }, 2))).not.toBe(key)
    expect(callKey(call('tools', 'pay', { cents: 5 })).split('#')[0]).toBe('tools.pay')
  })

  it('reads escaped names as JSON; a name it cannot find within its bounds is labelled "call"', () => {
    expect(callKey(call('tools', 'a"b\\c', {})).split('#')[0]).toBe('tools.a"b\\c')
    // A name longer than 200 characters, or one that starts past the first 512: not read.
    expect(callKey(call('tools', 'x'.repeat(201), {})).split('#')[0]).toBe('call')
    expect(callKey(call('tools', 'x'.repeat(200), {})).split('#')[0]).toBe(`tools.${'x'.repeat(200)}`)
    const late = JSON.stringify({ type: 'call', pad: 'p'.repeat(520), global: 'tools', name: 'n', args: {} })
    expect(callKey(late).split('#')[0]).toBe('call')
  })
})

describe('a journal and its size', () => {
  it('starts empty, a fresh one each time', () => {
    const a = newJournal()
    expect(a).toEqual({ inputs: [], reads: [], ops: '', calls: [] })
    a.inputs.push('x')
    expect(newJournal().inputs).toEqual([])
  })

  it('counts each string entry as its length + 1 and each number as 9, over inputs, reads and calls', () => {
    expect(journalChars(newJournal())).toBe(0)
    expect(journalChars({ inputs: ['ab', 5], reads: ['x', 0.5], ops: 'nr', calls: ['k', 'kk'] })).toBe(3 + 9 + 2 + 9 + 2 + 3)
  })

  it('one code per journaled service, and a 4 Mi-unit cap', () => {
    expect(READ_CODES).toEqual({ now: 'n', date: 'd', rand: 'r', random: 'b' })
    expect(MAX_JOURNAL_CHARS).toBe(4 * 1024 * 1024)
  })
})

const vm = (): ParkedVm => ({ journal: { inputs: ['{"type":"run"}', 3], reads: [1.5, 'x'], ops: 'nd', calls: ['tools.a#1'] }, clockMs: 12, timers: [[1, 50]] })
const state = (): ParkedRunState => ({
  version: 1,
  vm: vm(),
  logs: [{ source: 'console', level: 'log', text: 'hi' }],
  logBytes: 3,
  logTruncated: false,
  busyMs: 4,
  wallMs: 9,
  lastCallId: 2,
  calls: [{ id: 2, global: 'tools', name: 'pay', args: { cents: 5 } }],
})

describe('the shape checks of a parked state read back from a store', () => {
  it('accept what a park writes', () => {
    expect(isParkedVm(vm())).toBe(true)
    expect(isParkedVm({ ...vm(), timers: [] })).toBe(true)
    expect(isParkedRunState(state())).toBe(true)
    expect(isParkedRunState(JSON.parse(JSON.stringify(state())))).toBe(true)
  })

  const vmVariants: [string, unknown][] = [
    ['null', null],
    ['a string', 'vm'],
    ['a clock that is not a number', { ...vm(), clockMs: '12' }],
    ['timers that are not a list', { ...vm(), timers: {} }],
    ['a timer of three numbers', { ...vm(), timers: [[1, 2, 3]] }],
    ['a timer with a string', { ...vm(), timers: [[1, '2']] }],
    ['no journal', { ...vm(), journal: undefined }],
    ['a null journal', { ...vm(), journal: null }],
    ['inputs that are not a list', { ...vm(), journal: { ...vm().journal, inputs: 'x' } }],
    ['an input that is an object', { ...vm(), journal: { ...vm().journal, inputs: [{}] } }],
    ['reads that are not a list', { ...vm(), journal: { ...vm().journal, reads: 1 } }],
    ['a read that is a boolean', { ...vm(), journal: { ...vm().journal, reads: [true, 1] } }],
    ['ops that are not a string', { ...vm(), journal: { ...vm().journal, ops: ['n', 'd'] } }],
    ['ops of another length than reads', { ...vm(), journal: { ...vm().journal, ops: 'n' } }],
    ['calls that are not a list', { ...vm(), journal: { ...vm().journal, calls: 'k' } }],
    ['a call key that is a number', { ...vm(), journal: { ...vm().journal, calls: [1] } }],
  ]
  it.each(vmVariants)('refuse a VM with %s', (_why, value) => {
    expect(isParkedVm(value)).toBe(false)
    expect(isParkedRunState({ ...state(), vm: value })).toBe(false)
  })

  const stateVariants: [string, unknown][] = [
    ['null', null],
    ['another version', { ...state(), version: 2 }],
    ['logs that are not a list', { ...state(), logs: {} }],
    ['a log without text', { ...state(), logs: [{ source: 'console' }] }],
    ['a null log', { ...state(), logs: [null] }],
    ['negative log bytes', { ...state(), logBytes: -1 }],
    ['a non-boolean truncation flag', { ...state(), logTruncated: 0 }],
    ['busy time that is not finite', { ...state(), busyMs: Number.POSITIVE_INFINITY }],
    ['wall time that is NaN', { ...state(), wallMs: Number.NaN }],
    ['a last call id that is a string', { ...state(), lastCallId: '2' }],
    ['calls that are not a list', { ...state(), calls: {} }],
    ['a waiting call without an id', { ...state(), calls: [{ global: 'tools', name: 'pay' }] }],
    ['a waiting call whose binding is not named', { ...state(), calls: [{ id: 1, global: 'tools' }] }],
    ['a waiting call whose global is a number', { ...state(), calls: [{ id: 1, global: 1, name: 'pay' }] }],
    ['a null waiting call', { ...state(), calls: [null] }],
  ]
  it.each(stateVariants)('refuse a state with %s', (_why, value) => {
    expect(isParkedRunState(value)).toBe(false)
  })
})
