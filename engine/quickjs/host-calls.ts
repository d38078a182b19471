/**
 * A direct path for the VM's calls into its host functions, minus quickjs-emscripten's
 * asyncify machinery; falls back to the library's path when its shape differs.
 *
 * @module
 */
import { Lifetime, WeakLifetime } from 'quickjs-emscripten-core'
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten-core'

/** The FFI calls the direct path makes (the library's own bindings). */
interface HostCallFfi {
  QTS_ArgvGetJSValueConstPointer(argv: number, index: number): number
  QTS_DupValuePointer(ctx: number, value: number): number
  QTS_Throw(ctx: number, error: number): number
}

/** The FFI and emscripten calls {@link directDeliver} makes. */
interface DeliverFfi {
  QTS_NewString(ctx: number, chars: number): number
  QTS_Call(ctx: number, fn: number, thisValue: number, argc: number, argv: number): number
  QTS_ResolveException(ctx: number, value: number): number
  QTS_FreeValuePointer(ctx: number, value: number): void
  QTS_GetUndefined(): number
}
interface DeliverModule {
  readonly HEAPU8: Uint8Array
  _malloc(bytes: number): number
  _free(pointer: number): void
  lengthBytesUTF8(text: string): number
  stringToUTF8(text: string, pointer: number, bytes: number): void
}

/** The library's private parts of a context the direct path uses, as they are in 0.32. */
interface ContextInternals {
  readonly ffi: HostCallFfi
  readonly ctx: { readonly value: number }
  readonly memory: {
    readonly copyJSValue: (ptr: number) => number
    readonly freeJSValue: (ptr: number) => void
    heapValueHandle(ptr: number): QuickJSHandle
  }
  readonly cToHostCallbacks: { callFunction: (ctx: number, thisPtr: number, argc: number, argv: number, fnId: number) => number }
  errorToHandle(error: unknown): QuickJSHandle
}

/** A host function as the library stores it: called with the VM's `this` and arguments as handles. */
type HostFunction = (this: QuickJSHandle, ...args: QuickJSHandle[]) => QuickJSHandle | { readonly value?: QuickJSHandle; readonly error?: QuickJSHandle } | undefined | void

function internalsOf(context: QuickJSContext): ContextInternals | undefined {
  const c = context as unknown as Partial<ContextInternals>
  const ffi = c.ffi as Partial<HostCallFfi> | undefined
  if (
    typeof c.cToHostCallbacks?.callFunction !== 'function' ||
    typeof c.errorToHandle !== 'function' ||
    typeof c.ctx?.value !== 'number' ||
    typeof c.memory?.copyJSValue !== 'function' ||
    typeof c.memory.freeJSValue !== 'function' ||
    typeof ffi?.QTS_ArgvGetJSValueConstPointer !== 'function' ||
    typeof ffi.QTS_DupValuePointer !== 'function' ||
    typeof ffi.QTS_Throw !== 'function'
  ) {
    return undefined
  }
  return c as ContextInternals
}

/**
 * Routes the VM's calls of host functions in `context` (of `runtime`, a sync variant)
 * directly to them. Returns false, changing nothing, when the library's internals are not
 * the ones this was written for.
 */
export function directHostCalls(runtime: QuickJSRuntime, context: QuickJSContext): boolean {
  const internals = internalsOf(context)
  if (internals === undefined) return false
  const { ffi, memory } = internals
  const ctxPtr = internals.ctx.value
  const borrow = (ptr: number): QuickJSHandle => new WeakLifetime(ptr, memory.copyJSValue, memory.freeJSValue, runtime) as unknown as QuickJSHandle
  internals.cToHostCallbacks.callFunction = (ctx, thisPtr, argc, argv, fnId) => {
    if (ctx !== ctxPtr) throw new Error('QuickJSContext received a call for another context')
    const fn = runtime.hostRefs.get(fnId as Parameters<QuickJSRuntime['hostRefs']['get']>[0]) as unknown
    if (typeof fn !== 'function') throw new Error(`host reference ${fnId} is not a function`)
    const self = borrow(thisPtr)
    const args: QuickJSHandle[] = []
    for (let i = 0; i < argc; i++) args.push(borrow(ffi.QTS_ArgvGetJSValueConstPointer(argv, i)))
    try {
      const result = (fn as HostFunction).apply(self, args)
      if (result === undefined || result === null) return 0
      if (!(result instanceof Lifetime)) {
        if (result.error !== undefined) throw result.error
        if (result.value === undefined) return 0
      }
      const handle = result instanceof Lifetime ? (result as QuickJSHandle) : result.value!
      try {
        return ffi.QTS_DupValuePointer(ctxPtr, handle.value)
      } finally {
        if (handle.alive) handle.dispose()
      }
    } catch (error) {
      const thrown = internals.errorToHandle(error)
      try {
        return ffi.QTS_Throw(ctxPtr, thrown.value)
      } finally {
        if (thrown.alive) thrown.dispose()
      }
    } finally {
      for (const arg of args) arg.dispose()
      self.dispose()
    }
  }
  return true
}

/**
 * `deliver(fn, text)` calls the VM function `fn` with one string argument, as
 * `context.callFunction(fn, context.undefined, context.newString(text))` does (the
 * message deliveries of every binding call's reply), without the library's per-call
 * wrappers and argument array (measured 2.5-4 µs against 0.6-1.2 µs a call on this
 * machine). Returns the thrown value's handle, if any (the caller disposes it).
 * `undefined` when the library's internals are not the ones this was written for.
 */
export function directDeliver(context: QuickJSContext): ((fn: QuickJSHandle, text: string) => QuickJSHandle | undefined) | undefined {
  const internals = internalsOf(context)
  const c = context as unknown as { readonly ffi: Partial<DeliverFfi>; readonly module?: Partial<DeliverModule> }
  const ffi = c.ffi
  const module = c.module
  if (
    internals === undefined ||
    typeof internals.memory.heapValueHandle !== 'function' ||
    typeof ffi.QTS_NewString !== 'function' ||
    typeof ffi.QTS_Call !== 'function' ||
    typeof ffi.QTS_ResolveException !== 'function' ||
    typeof ffi.QTS_FreeValuePointer !== 'function' ||
    typeof ffi.QTS_GetUndefined !== 'function' ||
    typeof module?._malloc !== 'function' ||
    typeof module._free !== 'function' ||
    typeof module.lengthBytesUTF8 !== 'function' ||
    typeof module.stringToUTF8 !== 'function' ||
    !(module.HEAPU8 instanceof Uint8Array)
  ) {
    return undefined
  }
  const f = ffi as DeliverFfi
  const m = module as DeliverModule
  const ctxPtr = internals.ctx.value
  const undefinedValue = f.QTS_GetUndefined()
  // One argument slot for the sandbox's life (it goes with the instance's memory).
  const argv = m._malloc(4)
  // A VM whose memory is full: the library's path then reports it as QuickJS does.
  if (argv === 0) return undefined
  return (fn, text) => {
    const bytes = m.lengthBytesUTF8(text) + 1
    const chars = m._malloc(bytes)
    // A program that filled its memory: writing the reply at address 0 would overwrite the
    // VM's own low memory, so the run ends as a crash of its VM instead.
    if (chars === 0) throw new RangeError(`out of memory: no room in the VM for a ${bytes}-byte reply`)
    m.stringToUTF8(text, chars, bytes)
    const arg = f.QTS_NewString(ctxPtr, chars)
    m._free(chars)
    // A fresh view each time: the memory's buffer is replaced when it grows.
    new Int32Array(m.HEAPU8.buffer, argv, 1)[0] = arg
    const result = f.QTS_Call(ctxPtr, fn.value as number, undefinedValue, 1, argv)
    f.QTS_FreeValuePointer(ctxPtr, arg)
    const error = f.QTS_ResolveException(ctxPtr, result)
    f.QTS_FreeValuePointer(ctxPtr, result)
    return error === 0 ? undefined : internals.memory.heapValueHandle(error)
  }
}
