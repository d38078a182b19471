/**
 * A call flood's work on the page, task by task (issue 34 item 6), in Chromium: the replies a
 * 10,000-call flood sends its worker go in batches (one task of the worker per batch, and one
 * post of the page's), and a task of the page that delivers calls does not run its calls' steps
 * on a clock of their own after the delivery's (src/code-runtime/sliced-delivery.ts: one turn).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { DELIVERY_SLICE_MS, hostTurn, slicedDelivery } from '../../src/code-runtime/sliced-delivery.js'
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

/** Spins the page's thread for `ms`. */
function spin(ms: number): void {
  const end = performance.now() + ms
  while (performance.now() < end);
}

/** Calls `hostTurn` `steps` times in this task; how many of them yielded. */
function stepsThatYield(steps: number): number {
  let yielded = 0
  for (let i = 0; i < steps; i++) if (hostTurn() !== undefined) yielded++
  return yielded
}

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

  it('a step of the host after a delivery slice that took the turn\'s time yields (past the free steps): one clock for both', async () => {
    // A fresh turn: a task of its own.
    await new Promise((resolve) => setTimeout(resolve, 0))
    let yielded = -1
    const deliver = slicedDelivery(() => {
      spin(DELIVERY_SLICE_MS + 1)
      // The calls the slice started take their steps in this task: the turn is spent.
      yielded = stepsThatYield(17)
    })
    deliver('a call')
    // Before, the steps began a clock of their own at the first one: none of the 17 yielded, and a
    // task ran a 4 ms slice and then 4 ms and more of its calls (10 to 17 ms of CPU in a flood).
    expect(yielded).toBe(1)
  })

  it('a message that opens a slice is handled at once, whatever turn host steps spent before (a slice opens at a task\'s start)', async () => {
    await new Promise((resolve) => setTimeout(resolve, 0))
    stepsThatYield(1)
    spin(DELIVERY_SLICE_MS + 1)
    const seen: string[] = []
    const deliver = slicedDelivery((data) => seen.push(data as string))
    deliver('lone')
    expect(seen).toEqual(['lone'])
  })
})
