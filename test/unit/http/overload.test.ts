/**
 * Admission control through the HTTP API: when the sandbox's runs and queue are full,
 * `POST /v1/run` is refused at once with 503 `OVERLOADED` and `Retry-After`, as JSON and
 * before any event stream opens; and a flood of 400 concurrent runs that each hold
 * 20 MB, against the real `serve()`, leaves the server alive, its memory bounded, and
 * every request answered with its result or `OVERLOADED`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createSandboxRuntime, serve } from '../../../platforms/node/index.js'
import type { SandboxRuntime } from '../../../platforms/node/index.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { JSON_AUTH, createFixture, errorOf } from './fixtures.js'

const sandboxes: SandboxRuntime[] = []
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((sandbox) => sandbox.dispose()))
})

const runInit = (code: string, accept?: string): RequestInit => ({
  method: 'POST',
  headers: { ...JSON_AUTH, ...(accept === undefined ? {} : { Accept: accept }) },
  body: JSON.stringify({ code, description: 'load' }),
})

describe('POST /v1/run when the sandbox is full', () => {
  it('answers 503 OVERLOADED with Retry-After, as JSON and before a stream opens, and serves again once a run ends', async () => {
    const codeRuntime = createSandboxRuntime({ prespawn: 1, maxConcurrentRuns: 1, maxQueuedRuns: 0, memoryMb: 32 })
    sandboxes.push(codeRuntime)
    const { app, wait } = createFixture({ mode: 'both', codeRuntime })
    const holder = new AbortController()
    const busy = app.request('/v1/run', { ...runInit('await tools.wait({})\nreturn "held"'), signal: holder.signal })
    await wait.started
    expect(codeRuntime.load()).toMatchObject({ running: 1, queued: 0 })

    const json = await app.request('/v1/run', runInit('return 1'))
    expect(json.status).toBe(503)
    expect(json.headers.get('Retry-After')).toBe('1')
    const error = await errorOf(json)
    expect(error.code).toBe('OVERLOADED')
    expect(error.message).toMatch(/at capacity \(1 runs running, 0 waiting\); retry later/)

    const stream = await app.request('/v1/run', runInit('return 1', 'text/event-stream'))
    expect(stream.status).toBe(503)
    expect(stream.headers.get('Content-Type')).toBe('application/json')
    expect(stream.headers.get('Retry-After')).toBe('1')
    expect((await errorOf(stream)).code).toBe('OVERLOADED')

    // The tool route to run_code is refused alike (the run itself says overloaded).
    const direct = await app.request('/v1/tools/run_code/execute', {
      method: 'POST',
      headers: JSON_AUTH,
      body: JSON.stringify({ arguments: { code: 'return 1', description: 'x' } }),
    })
    expect(direct.status).toBe(503)
    expect((await errorOf(direct)).code).toBe('OVERLOADED')

    holder.abort()
    await Promise.resolve(busy).catch(() => undefined)
    await expect.poll(() => codeRuntime.load().running, { timeout: 5_000 }).toBe(0)
    const after = await app.request('/v1/run', runInit('return 2'))
    expect(after.status).toBe(200)
    const result = (await after.json()) as ToolExecutionResult
    expect(result.isError ? result.error : result.value).toEqual({ logs: [], result: 2 })
  })
})

describe('a flood of runs against the real server', () => {
  it('400 concurrent runs holding 20 MB each: every request gets its result or OVERLOADED, memory stays bounded, the server lives', async () => {
    // Budgets far above what a run needs: a run that ends on one under a loaded machine's slowness is not what is tested.
    const codeRuntime = createSandboxRuntime({ prespawn: 2, maxConcurrentRuns: 8, maxQueuedRuns: 56, memoryMb: 64, computeMs: 60_000, maxWallMs: 300_000 })
    sandboxes.push(codeRuntime)
    const { app } = createFixture({ mode: 'both', codeRuntime })
    const server = await serve(app, { port: 0 })
    try {
      const program = [
        "const held = 'x'.repeat(20 * 1024 * 1024)",
        'await new Promise((resolve) => setTimeout(resolve, 50))',
        'return held.length',
      ].join('\n')
      let peakRss = process.memoryUsage().rss
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, process.memoryUsage().rss)
      }, 20)
      const answers = await Promise.all(
        Array.from({ length: 400 }, async () => {
          const response = await fetch(`${server.url}/v1/run`, runInit(program))
          const body = (await response.json()) as ToolExecutionResult | { error: { code: string } }
          if (response.status === 503) return (body as { error: { code: string } }).error.code
          const result = body as ToolExecutionResult
          if (response.status === 200 && !result.isError) return (result.value as { result: unknown }).result
          return `unexpected ${response.status} ${result.isError ? result.error.message.slice(0, 160) : ''}`
        }),
      )
      clearInterval(sampler)
      const counts = new Map<unknown, number>()
      for (const answer of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1)
      // The figures show on failure only: a passing run prints nothing.
      const figures = `flood: ${counts.get(20 * 1024 * 1024)} results, ${counts.get('OVERLOADED')} OVERLOADED, peak RSS ${(peakRss / 1024 ** 2).toFixed(0)} MB`
      // Only two answers exist: the program's result, or a refusal.
      expect([...counts.keys()].sort(), figures).toEqual([20 * 1024 * 1024, 'OVERLOADED'].sort())
      expect(counts.get(20 * 1024 * 1024), figures).toBeGreaterThanOrEqual(8 + 56)
      expect(codeRuntime.load().threads).toBeLessThanOrEqual(8)
      expect(peakRss, figures).toBeLessThan(3 * 1024 ** 3)
      const health = await fetch(`${server.url}/v1/health`)
      expect(health.status).toBe(200)
    } finally {
      await server.close()
    }
  }, 120_000)
})
