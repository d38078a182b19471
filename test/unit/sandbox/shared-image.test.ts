/**
 * The process's memory image of a booted VM, shared with the sandbox threads it starts later
 * (platforms/node/sandbox-runtime.ts), on real threads: a later thread's first VM is restored from
 * it and is a fresh realm with its limits, whatever ran on the thread that took it; and it is kept
 * per thread file and memory size, so no thread restores an image made with anything else. Each test starts its threads from a file of its own (a one-line file that
 * requires the real thread bundle), so no test sees another's image.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import type { SandboxRuntime, SandboxRuntimeOptions } from '../../../src/code-runtime/sandbox-runtime.js'
import { keepsImage } from '../../../platforms/node/sandbox-runtime.js'
import { recordingPlatform, threadFile as threadFileIn } from '../../support/recording-threads.js'

const dir = mkdtempSync(join(tmpdir(), 'toolyard-shared-image-'))
const runtimes: SandboxRuntime[] = []

/** A thread file of this test's own, named `name`: `prelude`, then the real thread bundle. */
const threadFile = (name: string, prelude = ''): URL => threadFileIn(dir, name, prelude)

/**
 * A one-thread runtime on `url`'s threads, with its own record of how its threads' first VMs were made
 * (its own: a thread another runtime replaces after a stopped run may say ready at any time).
 */
function runtimeOn(url: URL, options: SandboxRuntimeOptions): { readonly run: SandboxRuntime['run']; readonly made: readonly string[] } {
  const { platform, made } = recordingPlatform(url)
  const runtime = createSandboxRuntimeOn(platform, { maxConcurrentRuns: 1, ...options })
  runtimes.push(runtime)
  return { run: (request) => runtime.run(request), made }
}

/** What `runtime`'s first thread said its first VM was, once it said it. */
async function firstMade(runtime: { readonly made: readonly string[] }): Promise<string> {
  await until(() => runtime.made.length > 0, 'the first ready')
  return runtime.made[0]!
}

async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** A runtime on `platform` whose only thread has said ready and stayed idle until the process keeps its image. */
async function imageTaker(url: URL, memoryMb: number): Promise<ReturnType<typeof runtimeOn>> {
  const runtime = runtimeOn(url, { memoryMb })
  await until(() => keepsImage(url, memoryMb), `the image of ${memoryMb} MiB VMs`)
  return runtime
}

describe('the memory image shared with later sandbox threads', () => {
  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.dispose()))
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it("restores a later thread's first VM from it: a fresh realm, whatever ran on the thread that took it", async () => {
    const url = threadFile('fresh')
    // The program runs first, on the thread's first VM; the thread takes the image afterwards, of a VM it boots anew.
    const first = runtimeOn(url, { memoryMb: 32 })
    const polluted = await first.run({ program: "globalThis.leak = 42; Object.prototype.polluted = 'yes'; Array.prototype.push = null; JSON.parse = () => 'no'; return 1", bindings: [] })
    expect(polluted.value).toBe(1)
    await until(() => keepsImage(url, 32), 'the image of 32 MiB VMs')
    const second = runtimeOn(url, { memoryMb: 32 })
    const seen = await second.run({ program: "return [typeof leak, ({}).polluted === undefined, typeof [].push, JSON.parse('2')]", bindings: [] })
    expect(seen.error).toBeUndefined()
    expect(seen.value).toEqual(['undefined', true, 'function', 2])
    // The first thread booted (nothing was kept yet); the second restored its first VM, the one that ran.
    expect(await firstMade(first)).toBe('booted')
    expect(await firstMade(second)).toBe('restored')
  })

  it("keeps the limits on a later thread's first VM: the memory cap, the stack limit, the compute budget", async () => {
    const url = threadFile('limits')
    await imageTaker(url, 32)
    const memory = runtimeOn(url, { memoryMb: 32 })
    expect((await memory.run({ program: "try { const big = new Uint8Array(48 * 1024 * 1024); return 'allocated ' + big.length } catch (e) { return 'refused' }", bindings: [] })).value).toBe('refused')
    const stack = runtimeOn(url, { memoryMb: 32 })
    expect((await stack.run({ program: "function f(n) { return f(n + 1) + 1 }\ntry { f(0); return 'no error' } catch (e) { return e.name + ': ' + e.message }", bindings: [] })).value).toMatch(/^(InternalError|RangeError): .*stack/)
    const loop = runtimeOn(url, { memoryMb: 32, computeMs: 300 })
    expect((await loop.run({ program: 'for (;;) {}', bindings: [] })).error?.kind).toBe('timeout')
    for (const runtime of [memory, stack, loop]) expect(await firstMade(runtime)).toBe('restored')
  })

  it('keeps one image per memory size: a runtime with another size boots its own, and its cap holds', async () => {
    const url = threadFile('sizes')
    expect(await firstMade(await imageTaker(url, 64))).toBe('booted')
    expect(await keepsImage(url, 32)).toBe(false)
    // No 32 MiB image yet: booted, not restored from the 64 MiB one (whose allocator limit is 60 MiB).
    expect(await firstMade(await imageTaker(url, 32))).toBe('booted')
    const small = runtimeOn(url, { memoryMb: 32 })
    expect((await small.run({ program: "try { const big = new Uint8Array(40 * 1024 * 1024); return 'allocated ' + big.length } catch (e) { return 'refused' }", bindings: [] })).value).toBe('refused')
    const large = runtimeOn(url, { memoryMb: 64 })
    expect((await large.run({ program: "const big = new Uint8Array(40 * 1024 * 1024); return 'allocated ' + big.length", bindings: [] })).value).toBe(`allocated ${40 * 1024 * 1024}`)
    expect(await firstMade(small)).toBe('restored')
    expect(await firstMade(large)).toBe('restored')
  })

  it('keeps one image per thread file: threads from another file (another version of the engine) boot their own', async () => {
    const url = threadFile('file-a')
    await imageTaker(url, 32)
    const other = threadFile('file-b')
    expect(await keepsImage(other, 32)).toBe(false)
    const runtime = runtimeOn(other, { memoryMb: 32 })
    expect((await runtime.run({ program: 'return 1', bindings: [] })).value).toBe(1)
    expect(await firstMade(runtime)).toBe('booted')
  })
})
