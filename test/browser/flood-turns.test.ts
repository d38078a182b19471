/**
 * A call flood's work on the page, task by task (issue 34 item 6), in Chromium: the replies a
 * 10,000-call flood sends its worker go in batches (one task of the worker per batch, and one
 * post of the page's).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { floodProgram } from '../support/stall-probe.js'

/** The page's posts to its sandbox workers: a batch counts one, as it costs one. Wrapped before the runtime spawns them. */
const posts = { count: 0, messages: 0 }
const post = Worker.prototype.postMessage
Worker.prototype.postMessage = function (this: Worker, message: unknown, options?: unknown) {
  posts.count++
  posts.messages += Array.isArray(message) ? message.length : 1
  return post.call(this, message, options as StructuredSerializeOptions)
} as typeof Worker.prototype.postMessage

const sandbox = createSandboxRuntime({ memoryMb: 64, computeMs: 60_000 })
afterAll(async () => {
  await sandbox.dispose()
})

describe('a flood on the page, task by task', () => {
  it('the replies to 10,000 calls cost the page a few hundred posts, not one per call in each turn\'s first sixteen', { timeout: 120_000 }, async () => {
    await sandbox.warm()
    await sandbox.run({ program: 'return await tools.echo({ i: 1 })', bindings: [{ global: 'tools', functions: { echo: async () => 1 } }] })
    const before = { ...posts }
    const result = await sandbox.run({ program: floodProgram(), bindings: [{ global: 'tools', functions: { echo: async (args: unknown) => (args as { i: number }).i } }] })
    expect(result.error).toBeUndefined()
    expect(result.value).toBe(10_000)
    const sent = posts.count - before.count
    // Every reply reaches the worker (and the run's own messages).
    expect(posts.messages - before.messages).toBeGreaterThanOrEqual(10_000)
    // Sixteen replies of each turn went one by one: 2,536 single posts of 2,734 in the playground's
    // flood. The first of a turn goes alone now, the rest of the turn in batches of 64: 364 there.
    expect(sent).toBeLessThan(1_000)
  })
})
