/**
 * Parking Python runs (MicroPython in Node worker threads): the resume checks every parking
 * runtime passes (test/contract/resume-contract.ts), and what only the Python thread does: its
 * readings come from the wasm imports, a replay that reads or calls otherwise diverges, a run that
 * keeps no journal (parking off) never parks, and the thread and slot go back to the pool.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { ParkedRunState } from '../../../src/code-runtime/contract.js'
import { parkingBindings as bindings, until, valueOf } from '../../contract/parking-contract.js'
import { describeReplayBudgetContract, describeResumeCheckContract } from '../../contract/resume-contract.js'

const runtimes: ReturnType<typeof createSandboxRuntime>[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()))
})

function python(options: Parameters<typeof createSandboxRuntime>[0] = {}) {
  const runtime = createSandboxRuntime({ language: 'python', memoryMb: 32, prespawn: 0, parkAfterMs: 30, ...options })
  runtimes.push(runtime)
  return runtime
}

describeReplayBudgetContract('python sandbox (Node threads)', (options) => python(options), 'python')
describeResumeCheckContract('python sandbox (Node threads)', (options) => python(options), 'python')

/** Parks `program` and returns its state as a store would keep it (the original run is aborted). */
async function parkedState(program: string): Promise<ParkedRunState> {
  const a = bindings()
  const controller = new AbortController()
  const original = python().run(a.request(program, { signal: controller.signal }))
  await until(() => a.parks.length === 1)
  controller.abort()
  await original
  return a.parks[0]!
}

describe('parking Python runs', () => {
  it('parks: the thread and slot go back to the pool; a plain run is answered meanwhile; the decision resumes it', async () => {
    const runtime = python({ maxConcurrentRuns: 1 })
    const b = bindings()
    const pending = runtime.run(b.request('first = await tools.effect({"n": 1})\nanswer = await tools.ask({"q": "pay?"})\nreturn [first, answer]'))
    await until(() => runtime.load().parked === 1 && runtime.load().running === 0)
    expect(valueOf(await runtime.run({ program: "return 6 * 7", bindings: [] }))).toBe(42)
    b.decide('yes')
    expect(valueOf(await pending)).toEqual([{ done: { n: 1 } }, 'yes'])
    expect(b.ran).toEqual(['effect:{"n":1}', 'ask:{"q":"pay?"}'])
  })

  it('journals the seed of random and the clocks: the state holds their readings', async () => {
    const state = await parkedState('import random, time\nx = random.random()\nt = time.time()\nawait tools.ask({})\nreturn x')
    // The run's own seed (random is reseeded at the start of every run), then time.time().
    expect(state.vm.journal.ops).toMatch(/^r.*d/)
    expect(state.vm.journal.calls).toHaveLength(1)
  })

  it('a replay that reads the clock where the journal holds randomness diverges', async () => {
    const state = await parkedState('import random\nx = random.random()\nawait tools.ask({})\nreturn x')
    const tampered = JSON.parse(JSON.stringify(state)) as ParkedRunState & { vm: { journal: { ops: string } } }
    tampered.vm.journal.ops = 'd' + tampered.vm.journal.ops.slice(1)
    const b = bindings()
    const resumed = python().run(b.request('unused', { durable: { resume: tampered } }))
    await until(() => b.waitingCount() === 1)
    b.decide('x')
    const result = await resumed
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toBe('REPLAY_DIVERGED: the resumed program did not repeat its journal: reading 1 of the clock or randomness was random, the journal holds another')
  })

  it('a journal that finishes the program before its waiting call diverges rather than answering twice', async () => {
    const state = await parkedState('await tools.ask({})\nreturn 1')
    const tampered = JSON.parse(JSON.stringify(state)) as ParkedRunState & { vm: { journal: { inputs: (string | number)[] } } }
    // A start whose program returns at once.
    const start = JSON.parse(tampered.vm.journal.inputs[0] as string) as { program: string }
    tampered.vm.journal.inputs[0] = JSON.stringify({ ...start, program: start.program.replace('await tools.ask({})', 'pass') })
    const b = bindings()
    const resumed = python().run(b.request('unused', { durable: { resume: tampered } }))
    await until(() => b.waitingCount() === 1)
    b.decide('x')
    const result = await resumed
    expect(result.error?.message).toMatch(/^REPLAY_DIVERGED: the resumed program did not repeat its journal: (it finished while replaying|it made 0 of the 1 calls)/)
  })

  it('a journal that fires a timer the program never armed diverges', async () => {
    const state = await parkedState('await tools.ask({})\nreturn 1')
    const tampered = JSON.parse(JSON.stringify(state)) as ParkedRunState & { vm: { journal: { inputs: (string | number)[] } } }
    tampered.vm.journal.inputs.push(999)
    const b = bindings()
    const resumed = python().run(b.request('unused', { durable: { resume: tampered } }))
    await until(() => b.waitingCount() === 1)
    b.decide('x')
    expect((await resumed).error?.message).toBe('REPLAY_DIVERGED: the resumed program did not repeat its journal: the journal fires timer 999, which the program had not armed')
  })

  it('with parking off the run keeps its thread and still gets its decision', async () => {
    const runtime = python({ parking: false })
    const b = bindings()
    const pending = runtime.run(b.request('return await tools.ask({})'))
    await until(() => b.waitingCount() === 1)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(runtime.load()).toMatchObject({ parked: 0, running: 1 })
    b.decide('kept')
    expect(valueOf(await pending)).toBe('kept')
    expect(b.parks).toEqual([])
  })

  it('a run with a timer due soon does not park until it has fired', async () => {
    const b = bindings()
    const pending = python({ parkAfterMs: 30 }).run(b.request('async def later():\n    await asyncio.sleep(0.01)\n    await tools.seen(1)\nasyncio.create_task(later())\nreturn await tools.ask({})'))
    await until(() => b.parks.length === 1)
    // It parked only once the 10 ms timer had fired: the replay holds that call.
    expect(b.seen).toEqual([1])
    expect(b.parks[0]!.vm.timers).toEqual([])
    b.decide('done')
    expect(valueOf(await pending)).toBe('done')
    expect(b.seen).toEqual([1])
  })
})
