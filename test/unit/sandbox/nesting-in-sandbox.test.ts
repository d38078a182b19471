/**
 * The nesting check a sandbox's bootstrap runs on every binding call's arguments holds only the
 * path from the root, never a level's breadth: a 2.7 M-value argument used to fill the VM's memory
 * with the walk's stack, after which every allocation tried (and failed) to grow the wasm memory
 * (~97 s a refusal). Now it is refused in seconds of the run's compute.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { nestsDeeperThan } from '../../../src/json/nesting.js'

const sandbox = createSandboxRuntime({ memoryMb: 64, computeMs: 60_000, maxWallMs: 180_000 })
afterAll(() => sandbox.dispose())

describe('the nesting check in the sandbox', () => {
  it('finds a deep value behind 1.2 M elements in a 64 MiB VM (the breadth-first walk ran out of memory there and missed it)', async () => {
    // One stack entry per element was ~100 MiB: the walk failed, was taken for "no deeper", and the
    // call was refused later for its value count instead of its nesting.
    const result = await sandbox.run({
      program: `let deep = 1; for (let i = 0; i < 110; i++) deep = [deep]; const arg = new Array(1_200_000).fill({}); arg.push(deep); try { await tools.take(arg); return 'sent' } catch (error) { return String(error) }`,
      bindings: [{ global: 'tools', functions: { take: async () => 1 } }],
    })
    expect(result.error).toBeUndefined()
    expect(result.value).toMatch(/they nest deeper than 100 levels/)
  }, 180_000)

  it('still finds what hangs deep below a wide level', () => {
    const wide: unknown[] = new Array(100_000).fill({})
    let deep: unknown = 1
    for (let i = 0; i < 70; i++) deep = [deep]
    wide.push(deep)
    expect(nestsDeeperThan(wide, 71)).toBe(false)
    expect(nestsDeeperThan(wide, 70)).toBe(true)
  })
})

describe('long arrays, walked index by index', () => {
  it('a sparse array of length 2^32 - 1 is walked by its keys, and what it holds still counts', () => {
    const sparse: unknown[] = []
    sparse.length = 2 ** 32 - 1
    const started = performance.now()
    expect(nestsDeeperThan(sparse, 1)).toBe(false)
    sparse[4_000_000_000] = [[1]]
    expect(nestsDeeperThan(sparse, 2)).toBe(true)
    expect(nestsDeeperThan(sparse, 3)).toBe(false)
    // Work, not time, is what is bounded; a generous figure that an index walk of 2^32 (minutes) cannot meet.
    expect(performance.now() - started).toBeLessThan(20_000)
  })

  it('a short array is still walked by its keys, extra properties included', () => {
    const short = Object.assign([1, 2], { extra: [[1]] })
    expect(nestsDeeperThan(short, 2)).toBe(true)
  })
})
