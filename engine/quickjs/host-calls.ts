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

/** The FFI calls {@link directJobs} makes. */
interface JobsFfi {
  QTS_ExecutePendingJob(rt: number, maxJobs: number, lastJobContext: number): number
  QTS_Typeof(ctx: number, value: number): number
  QTS_FreeValuePointer(ctx: number, value: number): void
  QTS_FreeValuePointerRuntime(rt: number, value: number): void
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

/**
 * `jobs()` runs the VM's pending promise jobs to exhaustion, as `runtime.executePendingJobs()`
 * does, without the library's per-call wrappers: a pointer array allocated and zero-filled
 * through three typed arrays, a context lookup, a handle for the count, `typeof` decoded from
 * UTF-8 (every sub-call pumps the queue once). Returns the thrown value's handle, if a job threw
 * (the caller disposes it). `undefined` when the library's internals are not the ones this was
 * written for, or the VM has no room for the out-pointer.
 */
export function directJobs(runtime: QuickJSRuntime, context: QuickJSContext): (() => QuickJSHandle | undefined) | undefined {
  const internals = internalsOf(context)
  const r = runtime as unknown as { readonly rt?: { readonly value?: unknown } }
  const c = context as unknown as { readonly ffi: Partial<JobsFfi>; readonly module?: Partial<DeliverModule> }
  const ffi = c.ffi
  const module = c.module
  if (
    internals === undefined ||
    typeof internals.memory.heapValueHandle !== 'function' ||
    typeof r.rt?.value !== 'number' ||
    typeof ffi.QTS_ExecutePendingJob !== 'function' ||
    typeof ffi.QTS_Typeof !== 'function' ||
    typeof ffi.QTS_FreeValuePointer !== 'function' ||
    typeof ffi.QTS_FreeValuePointerRuntime !== 'function' ||
    typeof module?._malloc !== 'function' ||
    typeof module._free !== 'function' ||
    !(module.HEAPU8 instanceof Uint8Array)
  ) {
    return undefined
  }
  const f = ffi as JobsFfi
  const m = module as DeliverModule
  const rtPtr = r.rt.value
  const ctxPtr = internals.ctx.value
  // The job's context comes back through this slot, for the sandbox's life (it goes with the instance's memory).
  const out = m._malloc(4)
  if (out === 0) return undefined
  return () => {
    // A fresh view each time: the memory's buffer is replaced when it grows.
    new Int32Array(m.HEAPU8.buffer, out, 1)[0] = 0
    const value = f.QTS_ExecutePendingJob(rtPtr, -1, out)
    const jobContext = new Int32Array(m.HEAPU8.buffer, out, 1)[0]!
    // No job ran: the count was made in no context.
    if (jobContext === 0) {
      f.QTS_FreeValuePointerRuntime(rtPtr, value)
      return undefined
    }
    // The count of jobs run is a number; a job's exception is whatever the job threw. `typeof`
    // spells "number" alone with an initial n.
    const type = f.QTS_Typeof(jobContext, value)
    const isNumber = type !== 0 && m.HEAPU8[type] === 0x6e
    if (type !== 0) m._free(type)
    if (isNumber) {
      f.QTS_FreeValuePointer(jobContext, value)
      return undefined
    }
    if (jobContext !== ctxPtr) {
      // Only the sandbox's one context queues jobs; anything else is reported, not read.
      f.QTS_FreeValuePointer(jobContext, value)
      throw new Error('a promise job ran in a context the sandbox does not own')
    }
    return internals.memory.heapValueHandle(value)
  }
}
