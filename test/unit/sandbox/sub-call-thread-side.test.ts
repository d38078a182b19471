/**
 * The sandbox thread's side of a sub-call (issue 34 item 4): what each lever that took work off
 * it must keep. The promise-job pump (`directJobs`, engine/quickjs/host-calls.ts) runs the
 * queue as the library's `executePendingJobs()` does, its failures included.
 */
import { describe, expect, it } from 'vitest'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core'
import type { QuickJSContext, QuickJSRuntime, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { directJobs } from '../../../engine/quickjs/host-calls.js'

const vm = async (): Promise<{ runtime: QuickJSRuntime; context: QuickJSContext }> => {
  const quickjs = await newQuickJSWASMModuleFromVariant(defaultVariant as unknown as QuickJSSyncVariant)
  const runtime = quickjs.newRuntime()
  return { runtime, context: runtime.newContext() }
}

const read = (context: QuickJSContext, code: string): unknown => {
  const handle = context.unwrapResult(context.evalCode(code))
  const value = context.dump(handle)
  handle.dispose()
  return value
}

describe('directJobs: the promise-job pump without the library wrappers', () => {
  it('runs the queue to exhaustion (jobs queued by jobs too), and an empty queue is a no-op', async () => {
    const { runtime, context } = await vm()
    const jobs = directJobs(runtime, context)
    expect(jobs).toBeDefined()
    expect(jobs!()).toBeUndefined()
    read(context, "globalThis.seen = []; Promise.resolve(1).then((v) => { seen.push(v); return v + 1 }).then((v) => seen.push(v)); (async () => { await null; await null; seen.push('async') })(); 0")
    expect(runtime.hasPendingJob()).toBe(true)
    expect(jobs!()).toBeUndefined()
    expect(runtime.hasPendingJob()).toBe(false)
    expect(read(context, 'seen')).toEqual([1, 2, 'async'])
    for (let i = 0; i < 2_000; i++) {
      read(context, 'Promise.resolve().then(() => 0); 0')
      expect(jobs!()).toBeUndefined()
    }
    context.dispose()
    runtime.dispose()
  })

  it.each([
    ['chains and awaits', "Promise.resolve(1).then((v) => { log.push(v); return v + 1 }).then((v) => log.push(v)); (async () => { await null; log.push('a'); await null; log.push('b') })()"],
    ['a throwing reaction', "Promise.resolve().then(() => { throw new TypeError('inside') }).catch((e) => log.push(e.message))"],
    ['an interrupted job', "Promise.resolve().then(() => { for (;;) {} }).catch((e) => log.push(e.message)); Promise.resolve().then(() => log.push('next'))"],
  ])('leaves the VM as the library does: %s', async (_name, code) => {
    const outcome = async (direct: boolean) => {
      const { runtime, context } = await vm()
      let stop = false
      runtime.setInterruptHandler(() => stop)
      read(context, `globalThis.log = []; ${code}; 0`)
      stop = code.includes('for (;;) {}')
      let failed: unknown
      if (direct) {
        const error = directJobs(runtime, context)!()
        if (error !== undefined) {
          failed = context.dump(error)
          error.dispose()
        }
      } else {
        const result = runtime.executePendingJobs()
        if (result.error !== undefined) {
          failed = context.dump(result.error)
          result.error.dispose()
        }
      }
      stop = false
      const state = { failed, pending: runtime.hasPendingJob(), log: read(context, 'log') }
      context.dispose()
      runtime.dispose()
      return state
    }
    const library = await outcome(false)
    expect(await outcome(true)).toEqual(library)
    expect((library.log as unknown[]).length).toBeGreaterThan(0)
  })

  it('leaves a context whose internals it does not know to the library', async () => {
    const { runtime, context } = await vm()
    expect(directJobs(runtime, {} as QuickJSContext)).toBeUndefined()
    expect(directJobs({} as QuickJSRuntime, context)).toBeUndefined()
    context.dispose()
    runtime.dispose()
  })
})
