/**
 * `validateRuntimeOptions`: the options in force (defaults, copies, freezing) and every
 * refusal with the message an integrator reads.
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PARALLEL_SUB_CALLS, validateRuntimeOptions } from '../../../src/registry/options.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { refusalMessage } from '../../support/refusal.js'

function refusal(options: unknown): string | undefined {
  return refusalMessage('INVALID_OPTIONS', () => validateRuntimeOptions(options))
}

describe('validateRuntimeOptions: the options in force', () => {
  it('defaults: native, 10 parallel sub-calls, 64 MiB of output, a 12,000-character SDK budget, preflight warn, nothing else', () => {
    expect(DEFAULT_MAX_PARALLEL_SUB_CALLS).toBe(10)
    expect(DEFAULT_MAX_OUTPUT_BYTES).toBe(67_108_864)
    for (const options of [undefined, {}, { mode: undefined }]) {
      const resolved = validateRuntimeOptions(options)
      expect(resolved).toEqual({ mode: 'native', maxParallelSubCalls: 10, maxOutputBytes: 67_108_864, sdkBudgetChars: 12_000, preflight: 'warn' })
      expect(Object.keys(resolved).sort()).toEqual(['maxOutputBytes', 'maxParallelSubCalls', 'mode', 'preflight', 'sdkBudgetChars'])
      expect(Object.isFrozen(resolved)).toBe(true)
    }
  })

  it('keeps every given option, and freezes a copy of the tool order', () => {
    const codeRuntime = createInProcessRuntime()
    const approval = () => ({ decision: 'allow' as const })
    const sessionLog = { append: () => {} }
    const order = ['b', 'a']
    const resolved = validateRuntimeOptions({ mode: 'both', codeRuntime, approval, sessionLog, maxParallelSubCalls: 1, maxOutputBytes: 5, toolOrder: order })
    expect(resolved).toEqual({ mode: 'both', codeRuntime, approval, sessionLog, maxParallelSubCalls: 1, maxOutputBytes: 5, toolOrder: ['b', 'a'], sdkBudgetChars: 12_000, preflight: 'warn' })
    expect(resolved.codeRuntime).toBe(codeRuntime)
    expect(resolved.approval).toBe(approval)
    expect(resolved.sessionLog).toBe(sessionLog)
    expect(resolved.toolOrder).not.toBe(order)
    expect(Object.isFrozen(resolved.toolOrder)).toBe(true)
    order.push('c')
    expect(resolved.toolOrder).toEqual(['b', 'a'])
    expect(validateRuntimeOptions({ mode: 'code' }).mode).toBe('code')
    expect(validateRuntimeOptions({ toolOrder: [] }).toolOrder).toEqual([])
  })

  it('reads the options through their descriptors, never through a getter or get trap', () => {
    let gets = 0
    const options = new Proxy({ mode: 'both' }, {
      get(target, key, receiver) {
        gets++
        return Reflect.get(target, key, receiver) as unknown
      },
    })
    expect(validateRuntimeOptions(options).mode).toBe('both')
    expect(gets).toBe(0)
  })

  it('accepts a code runtime whose fields are getters', () => {
    const inner = createInProcessRuntime()
    const viaGetters = {
      get language() {
        return 'typescript'
      },
      get isolation() {
        return 'x'
      },
      get run() {
        return inner.run
      },
      get dispose() {
        return inner.dispose
      },
      get capabilities() {
        return inner.capabilities
      },
    }
    expect(validateRuntimeOptions({ codeRuntime: viaGetters }).codeRuntime).toBe(viaGetters)
  })
})

describe('validateRuntimeOptions: refusals', () => {
  it('options that are not an object, with what they were', () => {
    expect(refusal(null)).toBe('createToolRuntime options must be an object (got null)')
    expect(refusal([])).toBe('createToolRuntime options must be an object (got an array)')
    expect(refusal('native')).toBe('createToolRuntime options must be an object (got "native")')
    expect(refusal(3)).toBe('createToolRuntime options must be an object (got 3)')
    expect(refusal(true)).toBe('createToolRuntime options must be an object (got true)')
    expect(refusal(() => {})).toBe('createToolRuntime options must be an object (got function)')
  })

  it('unknown options, listing the known ones', () => {
    expect(refusal({ modes: 'both' })).toBe('unknown option "modes" (known: mode, codeRuntime, approval, sessionLog, maxParallelSubCalls, maxOutputBytes, toolOrder, sdkBudgetChars, preflight, preflightEngine)')
  })

  it('accessors, and options that throw when read', () => {
    expect(refusal({ get mode() {
      return 'both'
    } })).toBe('options.mode must be a data property, not a getter/setter')
    const keysThrow = new Proxy({}, {
      ownKeys() {
        throw new Error('no keys')
      },
    })
    expect(refusal(keysThrow)).toBe('createToolRuntime options could not be read (no keys)')
    // Object.keys reads each descriptor once; the copy reads it again, and that read throws.
    let calls = 0
    const descriptorThrows = new Proxy({ mode: 'both' }, {
      getOwnPropertyDescriptor(target, key) {
        if (++calls > 1) throw 'odd'
        return Reflect.getOwnPropertyDescriptor(target, key)
      },
    })
    expect(refusal(descriptorThrows)).toBe('options.mode could not be read (odd)')
    const keysThrowValue = new Proxy({}, {
      ownKeys() {
        throw 42
      },
    })
    expect(refusal(keysThrowValue)).toBe('createToolRuntime options could not be read (42)')
  })

  it('skips a key whose descriptor vanished between listing and reading', () => {
    let calls = 0
    const vanishing = new Proxy({ mode: 'both' }, {
      getOwnPropertyDescriptor(target, key) {
        return ++calls > 1 ? undefined : Reflect.getOwnPropertyDescriptor(target, key)
      },
    })
    expect(validateRuntimeOptions(vanishing).mode).toBe('native')
  })

  it('a mode other than the three', () => {
    expect(refusal({ mode: 'hybrid' })).toBe(`options.mode must be 'native', 'code' or 'both' (got "hybrid")`)
    expect(refusal({ mode: 1 })).toBe(`options.mode must be 'native', 'code' or 'both' (got 1)`)
    expect(refusal({ mode: ['both'] })).toBe(`options.mode must be 'native', 'code' or 'both' (got an array)`)
  })

  it('a code runtime missing a field, or throwing when read', () => {
    const inner = createInProcessRuntime()
    const base = { language: 'typescript', isolation: 'x', run: inner.run, dispose: inner.dispose, capabilities: inner.capabilities }
    expect(refusal({ codeRuntime: 'worker' })).toBe('options.codeRuntime must be a CodeRuntime object (got "worker")')
    expect(refusal({ codeRuntime: null })).toBe('options.codeRuntime must be a CodeRuntime object (got null)')
    expect(refusal({ codeRuntime: { ...base, language: '' } })).toBe('options.codeRuntime.language must be a non-empty string')
    expect(refusal({ codeRuntime: { ...base, language: 1 } })).toBe('options.codeRuntime.language must be a non-empty string')
    expect(refusal({ codeRuntime: { ...base, isolation: undefined } })).toBe('options.codeRuntime.isolation must be a string')
    expect(refusal({ codeRuntime: { ...base, run: 'run' } })).toBe('options.codeRuntime.run must be a function')
    expect(refusal({ codeRuntime: { ...base, dispose: undefined } })).toBe('options.codeRuntime.dispose must be a function')
    expect(refusal({ codeRuntime: { ...base, capabilities: null } })).toBe('options.codeRuntime.capabilities must be an object')
    expect(refusal({ codeRuntime: { ...base, capabilities: 'all' } })).toBe('options.codeRuntime.capabilities must be an object')
    expect(refusal({ codeRuntime: base })).toBeUndefined()
    const throwing = { ...base, get language(): string {
      throw new Error('getter broke')
    } }
    expect(refusal({ codeRuntime: throwing })).toBe('options.codeRuntime could not be read (getter broke)')
    const throwingValue = { ...base, get run(): never {
      throw 'nope'
    } }
    expect(refusal({ codeRuntime: throwingValue })).toBe('options.codeRuntime could not be read (nope)')
  })

  it('an approval that is not a function', () => {
    expect(refusal({ approval: 'ask' })).toBe('options.approval must be a function (got "ask")')
    expect(refusal({ approval: {} })).toBe('options.approval must be a function (got object)')
  })

  it('a session log without append, or throwing when read', () => {
    for (const sessionLog of [null, 'log', {}, { append: 'x' }]) expect(refusal({ sessionLog })).toBe('options.sessionLog must be an object with an append(event) method')
    const throwing = { get append(): never {
      throw new Error('boom')
    } }
    expect(refusal({ sessionLog: throwing })).toBe('options.sessionLog could not be read (boom)')
  })

  it('limits that are not positive integers', () => {
    for (const value of [0, -1, 1.5, '2', Number.MAX_SAFE_INTEGER + 2, null]) {
      expect(refusal({ maxParallelSubCalls: value })).toBe(`options.maxParallelSubCalls must be a positive integer (got ${value === null ? 'null' : typeof value === 'string' ? `"${value}"` : String(value)})`)
      expect(refusal({ maxOutputBytes: value })).toMatch(/^options\.maxOutputBytes must be a positive integer \(got /)
    }
    expect(validateRuntimeOptions({ maxParallelSubCalls: 1, maxOutputBytes: 1 })).toMatchObject({ maxParallelSubCalls: 1, maxOutputBytes: 1 })
  })

  it('a tool order that is not a list of distinct names', () => {
    expect(refusal({ toolOrder: 'a,b' })).toBe('options.toolOrder must be an array of tool names (got "a,b")')
    // eslint-disable-next-line no-sparse-arrays
    expect(refusal({ toolOrder: ['a', , 'b'] })).toBe('options.toolOrder[1] is missing (sparse array)')
    expect(refusal({ toolOrder: ['a', ''] })).toBe('options.toolOrder[1] must be a non-empty string (got "")')
    expect(refusal({ toolOrder: [3] })).toBe('options.toolOrder[0] must be a non-empty string (got 3)')
    expect(refusal({ toolOrder: ['a', 'b', 'a'] })).toBe('options.toolOrder names "a" twice')
  })
})
