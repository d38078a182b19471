/**
 * Lanes on the REAL sandbox runtime (QuickJS in Node worker threads, issue 34 item 5): runs
 * waiting for a slot queue per `CodeRunRequest.lane` and the lanes take turns, so a short run in
 * its own lane is not stuck behind a long queue in another; `run_code` sets the lane from the
 * caller's HTTP principal, else its agent.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeRunRequest, CodeRunResult, CodeRuntime } from '../../../src/code-runtime/contract.js'
import { CONGESTED_LANE_RUNS, MAX_LANE_CHARS } from '../../../src/code-runtime/run-lanes.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { until } from '../../support/poll.js'
import { createFixture, jsonAuth, ROLE_TOKENS, AGENT_TOKEN, PERSON_TOKEN } from '../http/fixtures.js'

const runtimes: CodeRuntime[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()))
})

/** One slot, no spare: every run after the first waits in the queue until the blocker ends. */
function oneSlot() {
  const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 1_000 })
  runtimes.push(runtime)
  const started: string[] = []
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  const bindings = [
    {
      global: 'tools',
      functions: {
        mark: async (args: unknown) => {
          started.push((args as { n: string }).n)
          return null
        },
        hold: () => held.then(() => null),
      },
    },
  ]
  const marked = (n: string, lane?: string, signal?: AbortSignal): CodeRunRequest => ({
    program: `await tools.mark({ n: ${JSON.stringify(n)} }); return ${JSON.stringify(n)}`,
    bindings,
    ...(lane === undefined ? {} : { lane }),
    ...(signal === undefined ? {} : { signal }),
  })
  /** Starts the blocker in `lane` and resolves once it holds the one slot. */
  const block = async (lane?: string): Promise<{ blocker: Promise<CodeRunResult> }> => {
    const blocker = runtime.run({ program: `await tools.mark({ n: 'blocker' }); await tools.hold({}); return 0`, bindings, ...(lane === undefined ? {} : { lane }) })
    await until(() => started.includes('blocker'))
    // Wrapped: an async function returning the run's promise would wait for the run.
    return { blocker }
  }
  return { runtime, started, release, marked, block }
}

describe('lanes: runs waiting for a slot take turns by lane (sandbox runtime, Node threads)', () => {
  it('a run in lane B submitted after 30 queued in lane A starts next', async () => {
    const s = oneSlot()
    const { blocker } = await s.block('A')
    const queued = Array.from({ length: 30 }, (_, i) => s.runtime.run(s.marked(`a${i}`, 'A')))
    const short = s.runtime.run(s.marked('b', 'B'))
    expect(s.runtime.load().queued).toBe(31)
    s.release()
    await Promise.all([blocker, short, ...queued])
    expect(s.started.slice(0, 3)).toEqual(['blocker', 'b', 'a0'])
    expect(s.started.slice(2)).toEqual(Array.from({ length: 30 }, (_, i) => `a${i}`))
  })

  it('three lanes take turns; each lane is first in, first out', async () => {
    const s = oneSlot()
    const { blocker } = await s.block()
    const runs: Promise<CodeRunResult>[] = []
    for (const lane of ['A', 'B', 'C']) for (let i = 0; i < 3; i++) runs.push(s.runtime.run(s.marked(`${lane}${i}`, lane)))
    s.release()
    await Promise.all([blocker, ...runs])
    expect(s.started).toEqual(['blocker', 'A0', 'B0', 'C0', 'A1', 'B1', 'C1', 'A2', 'B2', 'C2'])
  })

  it('a congested lane alternates its oldest and its newest run: a run that arrives behind a burst starts within two turns', async () => {
    const s = oneSlot()
    const { blocker } = await s.block('A')
    const burst = Array.from({ length: CONGESTED_LANE_RUNS + 36 }, (_, i) => s.runtime.run(s.marked(`a${i}`, 'A')))
    const late = s.runtime.run(s.marked('late', 'A'))
    s.release()
    await Promise.all([blocker, late, ...burst])
    // First in, first out it would start last (101st); the lane holds 101 > CONGESTED_LANE_RUNS.
    expect(s.started.slice(0, 3)).toEqual(['blocker', 'a0', 'late'])
    // Every other turn takes the oldest: the burst's first runs keep their order.
    expect(s.started.filter((_, i) => i % 2 === 1).slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `a${i}`))
    expect(s.started).toHaveLength(CONGESTED_LANE_RUNS + 38)
  })

  it('a queued run aborted leaves its lane (a lane with none left leaves the turns); the total queued follows', async () => {
    const s = oneSlot()
    const { blocker } = await s.block()
    const controllers = new Map<string, AbortController>()
    const runs = new Map<string, Promise<CodeRunResult>>()
    for (const [name, lane] of [['A0', 'A'], ['A1', 'A'], ['A2', 'A'], ['B0', 'B'], ['B1', 'B'], ['C0', 'C']] as const) {
      const controller = new AbortController()
      controllers.set(name, controller)
      runs.set(name, s.runtime.run(s.marked(name, lane, controller.signal)))
    }
    expect(s.runtime.load().queued).toBe(6)
    for (const name of ['A1', 'B0', 'C0']) controllers.get(name)!.abort(new Error(`stop ${name}`))
    for (const name of ['A1', 'B0', 'C0']) expect((await runs.get(name)!).error).toMatchObject({ kind: 'abort', message: expect.stringContaining(`stop ${name}`) })
    expect(s.runtime.load().queued).toBe(3)
    s.release()
    await Promise.all([blocker, ...runs.values()])
    expect(s.started).toEqual(['blocker', 'A0', 'B1', 'A2'])
    expect(s.runtime.load().queued).toBe(0)
  })

  it('runs waiting to resume take turns by lane too: a decision in lane B is not held behind thirty in lane A', async () => {
    const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 1_000, parkAfterMs: 20 })
    runtimes.push(runtime)
    const resumed: string[] = []
    const answers = new Map<string, (value: unknown) => void>()
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const bindings = [
      {
        global: 'tools',
        functions: {
          ask: async (args: unknown, options?: { holdWallClock?: () => () => void }) => {
            const done = options?.holdWallClock?.()
            try {
              return await new Promise((resolve) => answers.set((args as { n: string }).n, resolve))
            } finally {
              done?.()
            }
          },
          mark: async (args: unknown) => {
            resumed.push((args as { n: string }).n)
            return null
          },
          hold: () => held.then(() => null),
        },
      },
    ]
    const asking = (n: string, lane: string) => runtime.run({ program: `const a = await tools.ask({ n: ${JSON.stringify(n)} }); await tools.mark({ n: ${JSON.stringify(n)} }); return a`, bindings, lane })
    const names = [...Array.from({ length: 30 }, (_, i) => [`a${i}`, 'A'] as const), ['b', 'B'] as const]
    const runs = names.map(([n, lane]) => asking(n, lane))
    await until(() => answers.size === names.length && runtime.load().parked === names.length && runtime.load().running === 0, 'every asking run parked', 60_000)
    // The one slot is held: every decision below queues its run's resume.
    const blocker = runtime.run({ program: `await tools.hold({}); return 0`, bindings, lane: 'C' })
    await until(() => runtime.load().running === 1)
    for (const [n] of names) answers.get(n)!(`yes ${n}`)
    await until(() => runtime.load().queued === names.length, 'every resume queued')
    release()
    const results = await Promise.all([blocker, ...runs])
    expect(results.map((r) => r.error)).toEqual(results.map(() => undefined))
    // First in, first out, 'b' would resume last (31st).
    expect(resumed.slice(0, 2)).toEqual(['a0', 'b'])
    expect(resumed.filter((n) => n !== 'b')).toEqual(Array.from({ length: 30 }, (_, i) => `a${i}`))
  }, 120_000)

  it('checks the lane: a string of 1 to MAX_LANE_CHARS characters, else an exception result that says so', async () => {
    const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 0 })
    runtimes.push(runtime)
    const message = `TypeError: request.lane must be a string of 1–${MAX_LANE_CHARS} characters`
    for (const lane of [7, '', 'x'.repeat(MAX_LANE_CHARS + 1), null, { name: 'A' }]) {
      const result = await runtime.run({ program: 'return 1', bindings: [], lane } as unknown as CodeRunRequest)
      expect(result.error, JSON.stringify(lane)).toEqual({ kind: 'exception', message })
    }
    expect((await runtime.run({ program: 'return 1', bindings: [], lane: 'x'.repeat(MAX_LANE_CHARS) })).value).toBe(1)
  })
})

describe('run_code sets the lane from who asked', () => {
  /** A real sandbox that records each request's lane. */
  function recording() {
    const sandbox = createSandboxRuntime({ memoryMb: 32, prespawn: 0 })
    runtimes.push(sandbox)
    const lanes: (string | undefined)[] = []
    const runtime: CodeRuntime = {
      ...sandbox,
      run: (request) => {
        lanes.push(request.lane)
        return sandbox.run(request)
      },
    }
    return { runtime, lanes }
  }

  it('through the registry: the principal, else the agent (cut to the bound), else the shared lane', async () => {
    const { runtime, lanes } = recording()
    const registry = createToolRuntime({ mode: 'code', codeRuntime: runtime })
    const run = async (extra: { principal?: string; agent?: string }) => {
      const result = await registry.execute({ callId: `c${lanes.length}`, name: 'run_code', arguments: { code: 'return 6 * 7', description: 'a product' }, signal: new AbortController().signal, ...extra })
      expect(result.isError).toBe(false)
    }
    await run({ principal: 'alice', agent: 'planner' })
    await run({ agent: 'planner' })
    await run({})
    await run({ agent: 'p'.repeat(400) })
    expect(lanes).toEqual(['principal:alice', 'agent:planner', undefined, `agent:${'p'.repeat(MAX_LANE_CHARS - 'agent:'.length)}`])
  })

  it('over HTTP: each token principal is its own lane, whatever agent it names', async () => {
    const { runtime, lanes } = recording()
    const f = createFixture({ mode: 'both', codeRuntime: runtime }, { tokens: ROLE_TOKENS })
    for (const [token, agent] of [[AGENT_TOKEN, 'a1'], [AGENT_TOKEN, 'a2'], [PERSON_TOKEN, undefined]] as const) {
      const response = await f.app.request('/v1/tools/run_code/execute', { method: 'POST', headers: jsonAuth(token), body: JSON.stringify({ arguments: { code: 'return 6 * 7', description: 'a product' }, ...(agent === undefined ? {} : { agent }) }) })
      expect(response.status).toBe(200)
    }
    expect(lanes).toEqual(['principal:agent', 'principal:agent', 'principal:person'])
  })
})
