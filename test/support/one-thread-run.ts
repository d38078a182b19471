import { createSandboxRuntimeOn } from '../../src/code-runtime/sandbox-runtime.js'
import { nodeSandboxPlatform } from '../../platforms/node/sandbox-runtime.js'

/**
 * One fresh one-thread sandbox runtime on the thread file at `url`: its first run, then dispose
 * (as its thread ends it gives the process the image it booted). Answers the run's value, or its
 * error. For tests of what a process keeps per thread file (images, code caches).
 */
export async function oneThreadRun(url: URL, program = 'return 1'): Promise<unknown> {
  const runtime = createSandboxRuntimeOn(nodeSandboxPlatform(url), { maxConcurrentRuns: 1 })
  try {
    const result = await runtime.run({ program, bindings: [] })
    return result.error ?? result.value
  } finally {
    await runtime.dispose()
  }
}
