/**
 * A sandbox runtime disposed right after its first run, before its thread's idle scan took the
 * memory image, still leaves the process its image (platforms/node/sandbox-runtime.ts asks the
 * thread for it before ending it; engine/quickjs/thread-server.ts finishes its scan at once): the
 * next runtimes' threads restore their first VM instead of booting it. Counted, not timed: how
 * each thread's first VM was made. Threads from a file of their own, so no other test's image counts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import type { SandboxPlatform } from '../../../src/code-runtime/sandbox-runtime.js'
import { keepsImage } from '../../../platforms/node/sandbox-runtime.js'
import { recordingPlatform, threadFile } from '../../support/recording-threads.js'

const dir = mkdtempSync(join(tmpdir(), 'toolyard-image-at-dispose-'))

/** The Node platform on a thread file of its own, recording how each thread's first VM was made (its first `ready`). */
function recording(name: string): { readonly url: URL; readonly platform: SandboxPlatform; readonly made: string[] } {
  const url = threadFile(dir, name)
  return { url, ...recordingPlatform(url) }
}

describe('the memory image when a runtime is disposed right after its first run', () => {
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('is kept by the process, and every later thread restores its first VM from it', async () => {
    const { url, platform, made } = recording('disposed-early')
    for (let i = 0; i < 3; i++) {
      const runtime = createSandboxRuntimeOn(platform, { maxConcurrentRuns: 1, memoryMb: 32 })
      const result = await runtime.run({ program: 'return 1', bindings: [] })
      expect(result.value).toBe(1)
      await runtime.dispose()
      // Right after the first dispose, not after some idle time.
      expect(await keepsImage(url, 32), `image kept after runtime ${i + 1}`).toBe(true)
    }
    // One VM booted in the process (the first thread's); the two later threads restored theirs.
    expect(made).toEqual(['booted', 'restored', 'restored'])
  })
})
