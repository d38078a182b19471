/**
 * Sandbox threads a test can tell apart (Node): each test starts its threads from a thread file
 * of its own (a one-line file that requires the real thread bundle), so the process's memory
 * image it keeps per thread file is that test's alone; and a platform that records how each
 * thread's first VM was made (`booted` or `restored`, from its first `ready`), in spawn order.
 * Used by the shared-image and image-at-dispose tests.
 * @module
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { SandboxPlatform } from '../../src/code-runtime/sandbox-runtime.js'
import { nodeSandboxPlatform } from '../../platforms/node/sandbox-runtime.js'

const BUNDLE = fileURLToPath(new URL('../../platforms/node/_sandbox-thread.cjs', import.meta.url))

/** A thread file of its own in `dir`, named `name`: `prelude`, then the real thread bundle. */
export function threadFile(dir: string, name: string, prelude = ''): URL {
  const file = join(dir, `${name}.cjs`)
  writeFileSync(file, `"use strict";\n${prelude}\nrequire(${JSON.stringify(BUNDLE)})\n`)
  return pathToFileURL(file)
}

/** The Node platform on `url`'s threads, recording how each thread's first VM was made (its first `ready`), in spawn order. */
export function recordingPlatform(url: URL): { readonly platform: SandboxPlatform; readonly made: string[] } {
  const base = nodeSandboxPlatform(url)
  const made: string[] = []
  const platform: SandboxPlatform = {
    ...base,
    spawn: () => {
      const thread = base.spawn()
      let first = true
      thread.onMessage((data) => {
        const event = data as { type?: unknown; made?: unknown } | null
        if (first && event?.type === 'ready' && typeof event.made === 'string') {
          first = false
          made.push(event.made)
        }
      })
      return thread
    },
  }
  return { platform, made }
}
