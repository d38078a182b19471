/**
 * `eval` and the four function constructors, wrapped: QuickJS's stack limit is lowered while they
 * compile (the parser's recursion costs the host's stack most); docs/runtimes.md "Deep recursion".
 * @module
 */
import type { SandboxHostOp } from './sandbox-globals.js'

/** The host op that sets QuickJS's stack limit: `1` the compile limit, `0` the run limit. */
export const COMPILE_LIMIT_OP = 'compile-limit'

/** Installs the wrappers. `host(COMPILE_LIMIT_OP, 1 | 0)` lowers / restores the limit. */
export function guardCompilers(host: SandboxHostOp): void {
  const defineProperty = Object.defineProperty
  const getPrototypeOf = Object.getPrototypeOf
  const setPrototypeOf = Object.setPrototypeOf
  const construct = Reflect.construct
  const nativeEval = eval
  /** Nested compiles (an `eval` whose code calls `Function`): only the outermost restores. */
  let depth = 0
  const guarded = <T>(compile: () => T): T => {
    if (depth++ === 0) host(COMPILE_LIMIT_OP, 1)
    try {
      return compile()
    } finally {
      if (--depth === 0) host(COMPILE_LIMIT_OP, 0)
    }
  }

  // Named `eval` so that `eval.name` stays; an indirect call of the native one: global scope.
  const evalWrapper = {
    eval(source: unknown): unknown {
      if (typeof source !== 'string') return source
      return guarded(() => nativeEval(source))
    },
  }.eval
  defineProperty(globalThis, 'eval', { value: evalWrapper, writable: true, configurable: true, enumerable: false })

  const natives = [
    Function,
    getPrototypeOf(async function () {}).constructor,
    getPrototypeOf(function* () {}).constructor,
    getPrototypeOf(async function* () {}).constructor,
  ] as (new (...args: unknown[]) => unknown)[]
  const wrappers = new Map<unknown, unknown>()
  for (const native of natives) {
    // A plain function, not a class: callable without `new` like the native, and constructible
    // with a subclass's `new.target`.
    const wrapper = function (this: unknown, ...args: unknown[]): unknown {
      return guarded(() => construct(native, args, new.target ?? native))
    }
    defineProperty(wrapper, 'name', { value: native.name, configurable: true })
    defineProperty(wrapper, 'length', { value: native.length, configurable: true })
    defineProperty(wrapper, 'prototype', { value: native.prototype, writable: false, enumerable: false, configurable: false })
    const constructorSlot = Object.getOwnPropertyDescriptor(native.prototype, 'constructor')
    defineProperty(native.prototype, 'constructor', { ...constructorSlot, value: wrapper })
    wrappers.set(native, wrapper)
  }
  // The constructors' own prototype chain (AsyncFunction's [[Prototype]] is Function), on the wrappers.
  for (const native of natives) {
    const parent = getPrototypeOf(native) as unknown
    setPrototypeOf(wrappers.get(native) as object, (wrappers.get(parent) ?? parent) as object)
  }
  defineProperty(globalThis, 'Function', { value: wrappers.get(Function), writable: true, configurable: true, enumerable: false })
}
