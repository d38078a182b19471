/**
 * Sandboxes made from a memory image (`engine/quickjs/vm-image.ts`): every build after
 * the first copies the booted VM's memory into a fresh instance. These tests pin what
 * must stay true of such a VM: it is a fresh realm (nothing a program did in another VM
 * is visible), its randomness comes from the host, and its limits (memory, stack,
 * interrupts) hold; and, through both runtimes, that runs on restored VMs keep their
 * budgets. Each engine-level test checks `made === 'restored'` on the VM it runs in, so
 * it cannot pass on a booted one by accident.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it } from 'vitest'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import type { EmscriptenModuleLoader, EmscriptenModuleLoaderOptions, QuickJSEmscriptenModule, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { QuickJsEngine } from '../../../engine/quickjs/engine.js'
import type { QuickJsSandbox } from '../../../engine/quickjs/engine.js'
import { SANDBOX_SOURCE } from '../../../engine/quickjs/_sandbox-source.js'
import { nonZeroChunks, restoreMemoryImage, takeMemoryImage } from '../../../engine/quickjs/vm-image.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
// The package's CJS typings make the default import its namespace under NodeNext.
const variant = defaultVariant as unknown as QuickJSSyncVariant

const engine = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule })
const built: QuickJsSandbox[] = []
async function build(memoryMb = 32): Promise<QuickJsSandbox> {
  const sandbox = await engine.build(memoryMb)
  built.push(sandbox)
  return sandbox
}
/** A sandbox made from the image (the engine boots the first two of each size, then restores). */
async function restored(memoryMb = 32): Promise<QuickJsSandbox> {
  let sandbox = await build(memoryMb)
  for (let i = 0; i < 2 && sandbox.made === 'booted'; i++) sandbox = await build(memoryMb)
  expect(sandbox.made).toBe('restored')
  return sandbox
}

/** Evaluates `code` in the sandbox's context: its value (dumped), or `{ error }` with what it threw. */
function evaluate(sandbox: QuickJsSandbox, code: string): unknown {
  const { context } = sandbox
  const result = context.evalCode(code, 'test.js')
  if (result.error !== undefined) {
    const error = context.dump(result.error) as unknown
    result.error.dispose()
    return { error }
  }
  const value = context.dump(result.value) as unknown
  result.value.dispose()
  return value
}

const runtimes: CodeRuntime[] = []
afterAll(async () => {
  for (const sandbox of built) sandbox.dispose()
  await Promise.all(runtimes.map((runtime) => runtime.dispose()))
})

describe('memory images', () => {
  it('restore a booted memory byte for byte, over whatever a fresh instance wrote where the booted one has zeros', () => {
    const booted = new WebAssembly.Memory({ initial: 2 })
    const fresh = new WebAssembly.Memory({ initial: 2 })
    const bytes = new Uint8Array(booted.buffer)
    bytes.set([1, 2, 3], 10)
    bytes.set([9], 70_000)
    // A fresh instance's constructors wrote here; the booted VM later zeroed it.
    const freshBytes = new Uint8Array(fresh.buffer)
    freshBytes.set([7, 7, 7], 40_000)
    const image = takeMemoryImage(booted, nonZeroChunks(fresh))
    restoreMemoryImage(fresh, image)
    expect(Buffer.compare(freshBytes, bytes)).toBe(0)
    // Only the chunks that differ from zero on one side are kept, not the whole memory.
    expect(image.bytes.length).toBe(3 * 4096)
  })

  it('refuse a memory smaller than the image', () => {
    const image = takeMemoryImage(new WebAssembly.Memory({ initial: 3 }), new Uint8Array(0))
    expect(() => restoreMemoryImage(new WebAssembly.Memory({ initial: 2 }), image)).toThrow(RangeError)
  })
})

describe('QuickJsEngine: VMs restored from the image of a booted one', () => {
  it('boots the first two VMs of each memory size and restores the rest; with images off it boots every one', async () => {
    const first = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule })
    const made = [] as string[]
    for (const memoryMb of [32, 32, 32, 32, 48, 48, 48]) {
      const sandbox = await first.build(memoryMb)
      made.push(sandbox.made)
      sandbox.dispose()
    }
    expect(made).toEqual(['booted', 'booted', 'restored', 'restored', 'booted', 'booted', 'restored'])
    const off = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule, images: false })
    for (let i = 0; i < 2; i++) {
      const sandbox = await off.build(32)
      expect(sandbox.made).toBe('booted')
      sandbox.dispose()
    }
  })

  it('never images a VM that does not run on the memory the engine gave it: every build boots, and works', async () => {
    // A variant whose factory ignores `wasmMemory` (its wasm makes a memory of its own): an
    // image of the engine's memory would hold nothing of the VM.
    const ownMemory: QuickJSSyncVariant = {
      type: 'sync',
      importFFI: () => variant.importFFI(),
      importModuleLoader: async () => {
        const imported = (await variant.importModuleLoader()) as unknown
        const loader = (typeof imported === 'function' ? imported : (imported as { default: unknown }).default) as EmscriptenModuleLoader<QuickJSEmscriptenModule>
        return (options) => {
          const { wasmMemory: _ignored, ...rest } = (options ?? {}) as EmscriptenModuleLoaderOptions & { wasmMemory?: unknown }
          return loader(rest)
        }
      },
    }
    const own = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant: ownMemory, wasmModule })
    for (let i = 0; i < 4; i++) {
      const sandbox = await own.build(32)
      built.push(sandbox)
      expect(sandbox.made).toBe('booted')
      expect(evaluate(sandbox, 'typeof setTimeout')).toBe('function')
    }
  })

  it('a restored VM has the installed environment and the bootstrap ready message, and nothing of a program', async () => {
    const sandbox = await restored()
    expect(evaluate(sandbox, 'typeof setTimeout + typeof URL + typeof crypto.randomUUID + typeof TextEncoder')).toBe('functionfunctionfunctionfunction')
    const posted: string[] = []
    expect(sandbox.attach({ post: (json) => posted.push(json), timer: () => true, interrupt: () => false })).toBe(true)
    expect(posted).toHaveLength(1)
    expect(JSON.parse(posted[0]!)).toMatchObject({ type: 'ready' })
  })

  it('is a fresh realm: globals and prototypes a program changed in another VM (booted or restored) are not seen', async () => {
    const pollute = `
      Object.prototype.polluted = 'yes'
      Array.prototype.push = function () { return 'hijacked' }
      JSON.parse = () => 'hijacked'
      Math.random = () => 0.5
      globalThis.leaked = 'yes'
      'done'`
    const check = `[({}).polluted, [].push(1), JSON.parse('1'), Math.random() === 0.5, typeof leaked].join()`
    // The VM the image was taken from serves a run like any other: what it does is not in the image.
    const imaged = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule })
    for (const memoryMb of [32, 32]) {
      const booted = await imaged.build(memoryMb)
      built.push(booted)
      expect(evaluate(booted, pollute)).toBe('done')
    }
    const first = await imaged.build(32)
    built.push(first)
    expect(first.made).toBe('restored')
    expect(evaluate(first, check)).toBe(',1,1,false,undefined')
    expect(evaluate(first, pollute)).toBe('done')
    const second = await imaged.build(32)
    built.push(second)
    expect(second.made).toBe('restored')
    expect(evaluate(second, check)).toBe(',1,1,false,undefined')
  })

  it('takes Math.random and crypto from the host: two restored VMs read different values', async () => {
    const a = await restored()
    const b = await build()
    expect(b.made).toBe('restored')
    const read = '[Math.random(), crypto.randomUUID(), Array.from(crypto.getRandomValues(new Uint8Array(16))).join()]'
    const [randomA, uuidA, bytesA] = evaluate(a, read) as [number, string, string]
    const [randomB, uuidB, bytesB] = evaluate(b, read) as [number, string, string]
    expect(randomA).not.toBe(randomB)
    expect(uuidA).not.toBe(uuidB)
    expect(bytesA).not.toBe(bytesB)
  })

  it("keeps QuickJS's stack limit: deep recursion is a catchable error, and the VM goes on", async () => {
    const sandbox = await restored()
    const value = evaluate(sandbox, "function f(n) { return f(n + 1) + 1 }\ntry { f(0); 'no error' } catch (e) { e.name + ': ' + e.message }")
    expect(value).toMatch(/^(InternalError|RangeError): .*stack/)
    expect(evaluate(sandbox, '1 + 1')).toBe(2)
  })

  it('keeps the memory cap: an allocation past memoryMb fails inside the VM, and the VM goes on', async () => {
    const sandbox = await restored(32)
    const value = evaluate(sandbox, "try { const big = new Uint8Array(48 * 1024 * 1024); 'allocated ' + big.length } catch (e) { 'refused' }")
    expect(value).toBe('refused')
    const objects = evaluate(sandbox, "const keep = []\ntry { for (;;) keep.push(new Array(1e4).fill(keep.length)) } catch (e) { keep.length = 0; 'refused' }")
    expect(objects).toBe('refused')
    expect(evaluate(sandbox, '1 + 1')).toBe(2)
  })

  it('restores in place: a released VM\'s instance serves the next one, its memory reset byte for byte to the image and zero past it', async () => {
    const heapOf = (sandbox: QuickJsSandbox) => (sandbox.runtime as unknown as { module: QuickJSEmscriptenModule }).module.HEAPU8
    const own = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule })
    for (let i = 0; i < 2; i++) (await own.build(32)).dispose()
    const first = await own.build(32)
    expect(first.made).toBe('restored')
    const image = heapOf(first).slice()
    // Dirty the heap past the image and grow the memory, then change the realm.
    expect(evaluate(first, "globalThis.keep = new Uint8Array(14 * 1024 * 1024).fill(7); Object.prototype.polluted = 'yes'; globalThis.leaked = 1; keep.length")).toBe(14 * 1024 * 1024)
    expect(heapOf(first).length).toBeGreaterThan(image.length)
    first.release()
    const second = await own.build(32)
    built.push(second)
    expect(heapOf(second)).toBe(heapOf(first))
    const heap = heapOf(second)
    expect(Buffer.compare(heap.subarray(0, image.length), image)).toBe(0)
    expect(heap.subarray(image.length).every((byte) => byte === 0)).toBe(true)
    expect(evaluate(second, '[({}).polluted, typeof leaked, typeof keep].join()')).toBe(',undefined,undefined')
    // A crashed VM's instance is never reused.
    second.crashed = true
    second.release()
    const third = await own.build(32)
    built.push(third)
    expect(heapOf(third)).not.toBe(heap)
  })

  it('restores in place with limits intact: the memory cap and the stack limit hold on a reused instance', async () => {
    const own = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule })
    for (let i = 0; i < 3; i++) (await own.build(32)).release()
    const sandbox = await own.build(32)
    built.push(sandbox)
    expect(evaluate(sandbox, "try { new Uint8Array(48 * 1024 * 1024); 'allocated' } catch (e) { 'refused' }")).toBe('refused')
    expect(evaluate(sandbox, "function f(n) { return f(n + 1) + 1 }\ntry { f(0); 'no error' } catch (e) { e.name }")).toMatch(/InternalError|RangeError/)
    expect(evaluate(sandbox, '1 + 1')).toBe(2)
  })

  it('with imageInBuild off, builds boot without scanning; scanInSteps boots the next VM and takes the image, and its instance is reset in place after', async () => {
    const heapOf = (sandbox: QuickJsSandbox) => (sandbox.runtime as unknown as { module: QuickJSEmscriptenModule }).module.HEAPU8
    const own = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule, imageInBuild: false })
    const made: string[] = []
    for (let i = 0; i < 3; i++) {
      const sandbox = await own.build(32)
      made.push(sandbox.made)
      sandbox.release()
    }
    // No build scanned a memory: the second boot did not take the image (it used to, on a run's path).
    expect(made).toEqual(['booted', 'booted', 'booted'])
    let pauses = 0
    await own.scanInSteps(32, async () => {
      pauses++
      await new Promise((resolve) => setTimeout(resolve, 0))
    }, 0.01)
    // One step to make the instance, then steps of 64 chunks at most: 16 MiB are 4,096 chunks.
    expect(pauses).toBeGreaterThanOrEqual(1 + 4_096 / 64)
    const imaged = await own.build(32)
    built.push(imaged)
    expect(imaged.made).toBe('booted')
    const pollute = "Object.prototype.polluted = 'yes'; globalThis.leaked = new Uint8Array(1 << 20).fill(9); 1"
    expect(evaluate(imaged, pollute)).toBe(1)
    imaged.release()
    const next = await own.build(32)
    expect(next.made).toBe('restored')
    expect(heapOf(next)).toBe(heapOf(imaged))
    const restoredHeap = heapOf(next).slice()
    expect(evaluate(next, '[({}).polluted, typeof leaked].join()')).toBe(',undefined')
    expect(evaluate(next, pollute)).toBe(1)
    next.release()
    const again = await own.build(32)
    expect(heapOf(again)).toBe(heapOf(imaged))
    expect(Buffer.compare(heapOf(again).subarray(0, restoredHeap.length), restoredHeap)).toBe(0)
    // With an instance read whole to reset, scanning again does nothing.
    again.release()
    await own.scanInSteps(32, () => Promise.reject(new Error('no step expected')))
    const last = await own.build(32)
    built.push(last)
    expect(heapOf(last)).toBe(heapOf(imaged))
  })

  it('gives its image to onImage, and another engine that adopts a copy restores its first VM from it: a fresh realm with its limits', async () => {
    const images: unknown[] = []
    const taker = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule, imageInBuild: false, onImage: (memoryMb, image) => images.push([memoryMb, image]) })
    await taker.scanInSteps(32, () => Promise.resolve())
    expect(images).toHaveLength(1)
    const [memoryMb, image] = images[0] as [number, Parameters<QuickJsEngine['adoptImage']>[1]]
    expect(memoryMb).toBe(32)
    const polluted = await taker.build(32)
    built.push(polluted)
    expect(evaluate(polluted, "Object.prototype.polluted = 'yes'; globalThis.leaked = 1; 1")).toBe(1)
    // What a thread posts: a structured clone.
    const adopter = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule, imageInBuild: false })
    adopter.adoptImage(32, structuredClone(image))
    const first = await adopter.build(32)
    built.push(first)
    expect(first.made).toBe('restored')
    expect(evaluate(first, '[({}).polluted, typeof leaked, typeof setTimeout, typeof crypto.randomUUID].join()')).toBe(',undefined,function,function')
    expect(evaluate(first, "try { new Uint8Array(48 * 1024 * 1024); 'allocated' } catch (e) { 'refused' }")).toBe('refused')
    expect(evaluate(first, "function f(n) { return f(n + 1) + 1 }\ntry { f(0); 'no error' } catch (e) { e.name }")).toMatch(/InternalError|RangeError/)
    // A fresh instance's restore is not reset in place (its first reset would touch every page): the next VM is restored anew.
    first.release()
    const second = await adopter.build(32)
    built.push(second)
    expect(second.made).toBe('restored')
    expect((second.runtime as unknown as { module: unknown }).module).not.toBe((first.runtime as unknown as { module: unknown }).module)
  })

  it('past three fresh instances, a build while its scan pauses finishes the scan at once and takes its VM (issue 34)', async () => {
    const moduleOf = (sandbox: QuickJsSandbox) => (sandbox.runtime as unknown as { module: unknown }).module
    const images: Parameters<QuickJsEngine['adoptImage']>[1][] = []
    const taker = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule, imageInBuild: false, onImage: (_, image) => images.push(image) })
    await taker.scanInSteps(32, () => Promise.resolve())
    const adopter = new QuickJsEngine({ sandboxSource: SANDBOX_SOURCE, variant, wasmModule, imageInBuild: false })
    adopter.adoptImage(32, structuredClone(images[0]!))
    ;(await adopter.build(32)).release()
    // Back-to-back runs: the thread never idles, so the scan's pauses never end by themselves.
    let pauses = 0
    const scanned = adopter.scanInSteps(32, () => {
      pauses++
      return new Promise<void>(() => undefined)
    })
    // A thread's first runs keep the quick path: fresh instances.
    const fresh: QuickJsSandbox[] = []
    for (let i = 0; i < 3; i++) {
      const sandbox = await adopter.build(32)
      fresh.push(sandbox)
      sandbox.release()
    }
    expect(new Set(fresh.map(moduleOf)).size).toBe(3)
    const hurried = await adopter.build(32)
    expect(pauses).toBe(1)
    expect(fresh.some((sandbox) => moduleOf(sandbox) === moduleOf(hurried))).toBe(false)
    expect(hurried.made).toBe('restored')
    expect(evaluate(hurried, "Object.prototype.polluted = 'yes'; globalThis.leaked = 1; 1")).toBe(1)
    hurried.release()
    // Its instance is reset in place for the next VM, a fresh realm.
    const next = await adopter.build(32)
    built.push(next)
    expect(moduleOf(next) === moduleOf(hurried)).toBe(true)
    expect(evaluate(next, '[({}).polluted, typeof leaked].join()')).toBe(',undefined')
    await scanned
  })

  it("routes the interrupt poll to its own run: a hot loop stops when the run's handler says so", async () => {
    const sandbox = await restored()
    let polls = 0
    sandbox.attach({ post: () => undefined, timer: () => true, interrupt: () => ++polls > 5 })
    const value = evaluate(sandbox, 'while (true) {}') as { error?: { message?: string } }
    expect(value.error?.message).toMatch(/interrupted/)
    expect(polls).toBe(6)
  })
})

const RUNS_ON_RESTORED_VMS = [
  ['a program that changed prototypes and globals leaves nothing behind', async (runtime: CodeRuntime) => {
    const polluted = await runtime.run({ program: "Object.prototype.polluted = 'yes'; (globalThis as any).leaked = 1; return 'done'", bindings: [] })
    expect(polluted.value).toBe('done')
    const checked = await runtime.run({ program: "return [({} as any).polluted, typeof (globalThis as any).leaked].join()", bindings: [] })
    expect(checked.value).toBe(',undefined')
  }],
  ['a hot loop still dies at the compute budget', async (runtime: CodeRuntime) => {
    const result = await runtime.run({ program: 'while (true) {}', bindings: [] })
    expect(result.error?.kind).toBe('timeout')
  }],
  ['a memory bomb still ends the run, and the next run is fine', async (runtime: CodeRuntime) => {
    const result = await runtime.run({ program: 'const keep = []\nwhile (true) keep.push(new Array(1e5).fill({ a: 1 }))', bindings: [] })
    expect(['worker-exit', 'exception']).toContain(result.error?.kind)
  }],
  ['deep recursion is still a catchable error', async (runtime: CodeRuntime) => {
    const result = await runtime.run({ program: 'function f(n: number): number { return f(n + 1) + 1 }\ntry { f(0) } catch (e) { return (e as Error).message }', bindings: [] })
    expect(result.value).toMatch(/stack/)
  }],
] as const

describe.each([
  ['createQuickJsRuntime (inline)', () => createQuickJsRuntime({ wasmModule, computeMs: 3_000, memoryMb: 32 })],
  ['createSandboxRuntime (threads)', () => createSandboxRuntime({ computeMs: 3_000, memoryMb: 32, prespawn: 1, maxConcurrentRuns: 1 })],
])('%s: runs on restored VMs', (_name, make) => {
  const runtime = make()
  runtimes.push(runtime)
  it.each(RUNS_ON_RESTORED_VMS)('%s', async (_what, check) => {
    // An inline runtime's VMs after its first two are restored: the warm-up run takes one of the
    // booted ones, so the pollution check's second run is the first restored VM, whose image was
    // taken from the VM the polluting run used. A thread scans for the image in idle steps after
    // its first run, and its next boot takes it: the idle wait lets it, so the polluting run runs
    // on the imaged VM and the next one on its instance reset in place. (The compute budget
    // leaves a loaded machine's memory bomb time to reach the cap: it counts descheduled time too.)
    expect((await runtime.run({ program: 'return 1', bindings: [] })).value).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    await check(runtime)
    expect((await runtime.run({ program: 'return 2', bindings: [] })).value).toBe(2)
  }, 30_000)
})
