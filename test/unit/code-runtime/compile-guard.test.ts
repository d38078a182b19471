/**
 * The compile guard's source (src/code-runtime/in-sandbox/compile-guard.ts) in this realm, with
 * a host op that records what it is asked: every compile through `eval` or one of the four
 * function constructors lowers the stack limit first (`compile-limit`, 1) and puts it back
 * after (`compile-limit`, 0), once for nested compiles, also when the compile throws; nothing
 * else asks; the wrappers keep what the language says of the natives (names, lengths,
 * prototypes, calls without `new`, subclasses, indirect eval). test/unit/quickjs/compile-guard
 * checks the same on the bundled copy in QuickJS, where the limit itself is observable.
 *
 * Each case installs the guard, runs synchronously and puts this realm's compilers back
 * before it returns (nothing else runs while they are replaced).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { COMPILE_LIMIT_OP, guardCompilers } from '../../../src/code-runtime/in-sandbox/compile-guard.js'
import { NATIVE_COMPILERS, NATIVE_EVAL, compilersAreNative, saveCompilers } from './compile-guard-harness.js'

type Op = readonly [string, ...unknown[]]
type Compilers = { eval: (source: unknown) => unknown; Function: FunctionConstructor; natives: typeof NATIVE_COMPILERS; wrappers: ReadonlyArray<new (...args: string[]) => (...args: unknown[]) => unknown> }

/** Installs the guard, runs `body` with the guarded compilers and the ops asked so far, and puts the realm's own back. */
function guarded<T>(body: (c: Compilers, ops: Op[]) => T): { value: T; ops: Op[] } {
  const saved = saveCompilers()
  const ops: Op[] = []
  try {
    guardCompilers((...op: [string, ...unknown[]]) => {
      ops.push(op)
      return undefined
    })
    const wrappers = NATIVE_COMPILERS.map((native) => (native.prototype as { constructor: new (...args: string[]) => (...args: unknown[]) => unknown }).constructor)
    const compilers: Compilers = { eval: globalThis.eval as (source: unknown) => unknown, Function: globalThis.Function, natives: NATIVE_COMPILERS, wrappers }
    return { value: body(compilers, ops), ops }
  } finally {
    saved.restore()
  }
}

const LOWER: Op = [COMPILE_LIMIT_OP, 1]
const RESTORE: Op = [COMPILE_LIMIT_OP, 0]

afterEach(() => {
  expect(compilersAreNative()).toBe(true)
})

describe('compile guard: when it asks the host for the compile limit', () => {
  it('the op is named compile-limit', () => {
    expect(COMPILE_LIMIT_OP).toBe('compile-limit')
  })

  it('eval of a string: lowered, compiled, restored; eval of anything else: returned as is, nothing asked', () => {
    const { value, ops } = guarded((c, seen) => {
      const two = c.eval('1 + 1')
      const afterOne = [...seen]
      const object = { a: 1 }
      return { two, afterOne, five: c.eval(5), same: c.eval(object) === object, none: c.eval(undefined), afterOthers: seen.length }
    })
    expect(value).toEqual({ two: 2, afterOne: [LOWER, RESTORE], five: 5, same: true, none: undefined, afterOthers: 2 })
    expect(ops).toEqual([LOWER, RESTORE])
  })

  it('the limit is lowered during the compile and restored before eval returns', () => {
    const { value } = guarded((c, seen) => {
      // The evaluated code reads the ops the host was asked so far: the compile's lowering only.
      ;(globalThis as { __ops?: Op[] }).__ops = seen
      try {
        return c.eval('globalThis.__ops.slice()')
      } finally {
        delete (globalThis as { __ops?: Op[] }).__ops
      }
    })
    expect(value).toEqual([LOWER])
  })

  it('nested compiles (eval whose code calls Function, which evals): one lowering, one restore, by the outermost', () => {
    const { value, ops } = guarded((c) => c.eval('new Function("return eval(\'6 * 7\')")()'))
    expect(value).toBe(42)
    expect(ops).toEqual([LOWER, RESTORE])
  })

  it('a compile that throws restores the limit, and the next compile lowers it again', () => {
    const { value, ops } = guarded((c) => {
      const errors: string[] = []
      for (const compile of [() => c.eval('('), () => new c.Function('['), () => c.eval('throw new RangeError("x")')]) {
        try {
          compile()
        } catch (error) {
          errors.push((error as Error).name)
        }
      }
      return { errors, after: c.eval('3') }
    })
    expect(value).toEqual({ errors: ['SyntaxError', 'SyntaxError', 'RangeError'], after: 3 })
    expect(ops).toEqual([LOWER, RESTORE, LOWER, RESTORE, LOWER, RESTORE, LOWER, RESTORE])
  })

  it.each([0, 1, 2, 3])('constructor %i (Function, AsyncFunction, GeneratorFunction, AsyncGeneratorFunction): with and without new, each compile asks once', (index) => {
    const { value, ops } = guarded((c) => {
      const Wrapper = c.wrappers[index]!
      const withNew = new Wrapper('a', 'return a')
      const without = (Wrapper as unknown as (...args: string[]) => unknown)('return 1')
      return { withNew: Object.getPrototypeOf(withNew) === c.natives[index]!.prototype, without: Object.getPrototypeOf(without) === c.natives[index]!.prototype, wrapped: Wrapper !== c.natives[index] }
    })
    expect(value).toEqual({ withNew: true, without: true, wrapped: true })
    expect(ops).toEqual([LOWER, RESTORE, LOWER, RESTORE])
  })
})

describe('compile guard: the wrappers are what the language says of the natives', () => {
  it('eval and Function on globalThis: writable, configurable, not enumerable; eval keeps its name and is indirect', () => {
    const { value } = guarded((c) => ({
      evalSlot: Object.getOwnPropertyDescriptor(globalThis, 'eval'),
      functionSlot: Object.getOwnPropertyDescriptor(globalThis, 'Function'),
      evalName: c.eval.name,
      replaced: c.eval !== NATIVE_EVAL && (c.Function as unknown) !== NATIVE_COMPILERS[0],
      functionIsWrapper: (c.Function as unknown) === c.wrappers[0],
      // Indirect: the global scope, not this function's.
      scope: (() => {
        const local = 1
        void local
        return c.eval('typeof local')
      })(),
    }))
    expect(value).toMatchObject({
      evalSlot: { writable: true, configurable: true, enumerable: false },
      functionSlot: { writable: true, configurable: true, enumerable: false },
      evalName: 'eval',
      replaced: true,
      functionIsWrapper: true,
      scope: 'undefined',
    })
  })

  it('each wrapper: the native name, length and prototype (fixed); the prototype leads back to it; its own prototype chain mirrors the natives', () => {
    const { value } = guarded((c) =>
      c.wrappers.map((wrapper, i) => {
        const native = c.natives[i]!
        return {
          name: wrapper.name === native.name,
          length: wrapper.length === native.length,
          prototype: Object.getOwnPropertyDescriptor(wrapper, 'prototype'),
          samePrototype: wrapper.prototype === native.prototype,
          back: (native.prototype as { constructor: unknown }).constructor === wrapper,
          slot: Object.getOwnPropertyDescriptor(native.prototype, 'constructor'),
          // name and length as the language defines them: read-only, configurable, not enumerable.
          nameSlot: Object.getOwnPropertyDescriptor(wrapper, 'name'),
          lengthSlot: Object.getOwnPropertyDescriptor(wrapper, 'length'),
          parent: Object.getPrototypeOf(wrapper) === (i === 0 ? Object.getPrototypeOf(native) : c.wrappers[0]),
        }
      }),
    )
    const names = NATIVE_COMPILERS.map((native) => native.name)
    const own = NATIVE_COMPILERS.map((native) => {
      const { writable, enumerable, configurable } = Object.getOwnPropertyDescriptor(native.prototype, 'constructor')!
      return { writable, enumerable, configurable }
    })
    // Function.prototype.constructor is writable; the other three are not (the spec's attributes).
    expect(own.map((slot) => slot.writable)).toEqual([true, false, false, false])
    expect(names).toEqual(['Function', 'AsyncFunction', 'GeneratorFunction', 'AsyncGeneratorFunction'])
    for (const [i, one] of value.entries()) {
      expect(one, names[i]).toMatchObject({ name: true, length: true, samePrototype: true, back: true, parent: true, prototype: { writable: false, enumerable: false, configurable: false } })
      // The constructor slot keeps the native's attributes.
      expect(one.slot, names[i]).toMatchObject(own[i]!)
      expect(one.nameSlot, names[i]).toEqual(Object.getOwnPropertyDescriptor(NATIVE_COMPILERS[i]!, 'name'))
      expect(one.lengthSlot, names[i]).toEqual(Object.getOwnPropertyDescriptor(NATIVE_COMPILERS[i]!, 'length'))
    }
  })

  it('functions made anywhere lead back to the wrappers; instanceof and subclassing work', () => {
    const { value, ops } = guarded((c) => {
      const GF = c.wrappers[2]!
      class Sub extends (c.Function as unknown as new (...args: string[]) => () => unknown) {}
      const sub = new Sub('return 7')
      return {
        fnCtor: (function () {}).constructor === c.Function,
        arrowCtor: (() => 0).constructor === c.Function,
        instance: new c.Function('return 1') instanceof c.Function,
        gen: [...(new GF('yield 1; yield 2') as () => Iterable<number>)()].join(),
        sub: sub() === 7 && sub instanceof Sub && sub instanceof c.Function,
        reflect: (Reflect.construct(c.Function, ['return 3']) as () => number)(),
      }
    })
    expect(value).toEqual({ fnCtor: true, arrowCtor: true, instance: true, gen: '1,2', sub: true, reflect: 3 })
    // Four compiles (instance, gen, sub, reflect), each its own lowering.
    expect(ops).toEqual([LOWER, RESTORE, LOWER, RESTORE, LOWER, RESTORE, LOWER, RESTORE])
  })
})
