import { afterEach, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import type { NodeWorkerRuntime } from '../../../platforms/node/index.js'
import { ToolError } from '../../../src/errors.js'

const created: NodeWorkerRuntime[] = []
afterEach(async () => {
  await Promise.all(created.splice(0).map((r) => r.dispose()))
})

function invalid(options: unknown): ToolError {
  try {
    created.push(createNodeWorkerRuntime(options as never))
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    return error as ToolError
  }
  throw new Error('expected INVALID_OPTIONS')
}

describe('createNodeWorkerRuntime options', () => {
  it('has the RFC defaults and descriptors', () => {
    const runtime = createNodeWorkerRuntime()
    created.push(runtime)
    expect(runtime.limits).toEqual({ computeMs: 60_000, maxWallMs: 600_000, maxLogBytes: 65_536, maxValueBytes: 32_768, maxPendingArgBytes: 33_554_432 })
    expect(runtime.language).toBe('typescript')
    expect(runtime.isolation).toBe('worker-thread')
    expect(runtime.capabilities).toEqual({ streamsLogs: true, memoryLimit: true, capturesStdio: true })
  })

  it('accepts every option', () => {
    const runtime = createNodeWorkerRuntime({
      computeMs: 1_000,
      maxWallMs: 2_000,
      maxLogBytes: 10,
      maxValueBytes: 20,
      maxOldGenerationSizeMb: 64,
      maxYoungGenerationSizeMb: 16,
      stackSizeMb: 2,
      prespawn: 0,
    })
    created.push(runtime)
    expect(runtime.limits).toEqual({ computeMs: 1_000, maxWallMs: 2_000, maxLogBytes: 10, maxValueBytes: 20, maxPendingArgBytes: 33_554_432 })
  })

  it.each([
    [null, /options must be an object/],
    ['fast', /options must be an object/],
    [[], /options must be an object/],
    [{ computeMS: 5 }, /unknown option "computeMS"/],
    [{ computeMs: 0 }, /options\.computeMs must be an integer from 1/],
    [{ computeMs: 1.5 }, /options\.computeMs must be an integer/],
    [{ maxWallMs: Number.POSITIVE_INFINITY }, /options\.maxWallMs/],
    [{ maxWallMs: 2 ** 31 }, /options\.maxWallMs/],
    [{ maxLogBytes: '100' }, /options\.maxLogBytes .*got "100"/],
    [{ maxValueBytes: -1 }, /options\.maxValueBytes/],
    [{ maxOldGenerationSizeMb: 1 }, /options\.maxOldGenerationSizeMb must be an integer from 8/],
    [{ maxYoungGenerationSizeMb: 0 }, /options\.maxYoungGenerationSizeMb/],
    [{ stackSizeMb: Number.NaN }, /options\.stackSizeMb/],
    [{ prespawn: 17 }, /options\.prespawn must be an integer from 0 to 16/],
  ])('rejects %j with INVALID_OPTIONS', (options, message) => {
    const error = invalid(options)
    expect(error.code).toBe('INVALID_OPTIONS')
    expect(error.message).toMatch(/^createNodeWorkerRuntime: /)
    expect(error.message).toMatch(message)
  })
})
