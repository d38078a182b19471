/**
 * Nothing a run holds outlives it, and nothing a call holds outlives the call (issue 19,
 * What to build 4): the host session's in-flight calls and their argument bytes, the
 * sandbox pool's runs, after a thousand runs; and the two helpers that bound a call's
 * arguments by work (`scanJsonText` in the sandbox's thread, `adoptParsedJson` on the host).
 */
import { setMaxListeners } from 'node:events'
import { afterAll, describe, expect, it } from 'vitest'
import { CodeRunSession, prepareRun } from '../../../src/code-runtime/host-session.js'
import { ARG_BYTES_PER_NODE, DEFAULT_CODE_RUN_LIMITS } from '../../../src/code-runtime/limits.js'
import { JsonWireEndpoint } from '../../../src/code-runtime/json-endpoint.js'
import type { WireListener } from '../../../src/code-runtime/wire.js'
import { adoptParsedJson, isJsonSnapshot, snapshotLosslessJson } from '../../../src/json/lossless.js'
import { scanJsonText } from '../../../src/json/scan.js'
import { checkCallArgs } from '../../../engine/quickjs/vm-run.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import { liveAbortListeners, scriptedPlatform, tick } from '../sandbox/scripted-platform.js'
import { until } from '../../support/poll.js'

const turn = () => new Promise((resolve) => setTimeout(resolve, 0))

/** A session over a JSON endpoint this test drives: `vm` is what the VM would post. */
function jsonSession(functions: Record<string, (args: unknown, options: { signal: AbortSignal }) => unknown>) {
  const prepared = prepareRun({ program: 'p', bindings: [{ global: 'tools', functions }] })
  if (!prepared.ok) throw new Error(prepared.message)
  const replies: Array<Record<string, unknown>> = []
  let session: CodeRunSession | undefined
  const endpoint = new JsonWireEndpoint((json) => replies.push(JSON.parse(json) as Record<string, unknown>), (kind, message) => session?.fail(kind, message), 64)
  session = new CodeRunSession(prepared.run, 'p', { ...DEFAULT_CODE_RUN_LIMITS, maxPendingArgBytes: 1 << 20 }, { endpoint, terminate: () => undefined })
  session.start()
  return { session, replies, vm: (message: unknown) => endpoint.receive(JSON.stringify(message)) }
}

describe('the host session releases every call', () => {
  it('after 1,000 calls, settled or cut off by the run’s end, no call and no argument byte is held', async () => {
    const gates: Array<() => void> = []
    const { session, replies, vm } = jsonSession({
      now: (args) => args,
      later: (_args, { signal }) =>
        new Promise((resolve, reject) => {
          gates.push(() => resolve(1))
          signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })
        }),
    })
    // 500 gated calls listen on the run's one signal at once: on purpose here, so Node's
    // "more than 10 listeners" leak warning is lifted for this signal (it printed in npm test).
    setMaxListeners(0, session.signal)
    for (let id = 1; id <= 1_000; id++) vm({ type: 'call', id, global: 'tools', name: id % 2 === 0 ? 'now' : 'later', args: { id, pad: 'x'.repeat(100) } })
    const held = session.pendingCalls()
    expect(held.calls).toBe(1_000)
    // Each call weighs its message's text plus 64 bytes per JSON value (an object, two keys, two values).
    const text = JSON.stringify({ type: 'call', id: 1, global: 'tools', name: 'later', args: { id: 1, pad: 'x'.repeat(100) } }).length
    expect(held.argBytes).toBeGreaterThanOrEqual(1_000 * (text - 2 + 5 * ARG_BYTES_PER_NODE))
    await turn()
    expect(session.pendingCalls().calls).toBe(500)
    for (const open of gates.splice(0, 250)) open()
    await turn()
    expect(session.pendingCalls().calls).toBe(250)
    // The run ends with 250 calls in flight: their signal fires, and they are released too.
    vm({ type: 'done', value: 1 })
    await session.result
    await session.bindingsSettled()
    expect(session.pendingCalls()).toEqual({ calls: 0, argBytes: 0 })
    expect(replies.filter((r) => r.ok === true)).toHaveLength(750)
  })
})

describe('the sandbox pool releases every run', () => {
  const sandbox = createSandboxRuntime({ memoryMb: 32, maxConcurrentRuns: 2 })
  afterAll(() => sandbox.dispose())

  it('after 1,000 runs (each leaving a call in flight and a timer armed) nothing is running or queued', { timeout: 300_000 }, async () => {
    const hang = (_args: unknown, { signal }: { signal: AbortSignal }) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }))
    const results = []
    for (let batch = 0; batch < 100; batch++) {
      results.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, () =>
            sandbox.run({
              program: 'void tools.hang(); setTimeout(() => {}, 60_000); return await tools.echo(1)',
              bindings: [{ global: 'tools', functions: { hang, echo: async (x: unknown) => x } }],
            }),
          ),
        )),
      )
    }
    expect(results.filter((r) => r.value === 1)).toHaveLength(1_000)
    // A thread releasing the last run's VM counts as running until it says so (or is
    // replaced after STOP_GRACE_MS): wait for that, well past it; a leaked run never leaves.
    await until(() => sandbox.load().running === 0, 'the last run to leave', 20_000, 0).catch(() => undefined)
    const load = sandbox.load()
    expect(load.running).toBe(0)
    expect(load.queued).toBe(0)
    expect(load.threads).toBeLessThanOrEqual(2)
  })

  it("every abort listener a run adds to the caller's signal is gone once it settles", async () => {
    const { platform: p, threads } = scriptedPlatform({ autoReady: false })
    const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 1 })
    // Booting, then running; queued, then running.
    const [first, second] = [new AbortController(), new AbortController()]
    const [live1, live2] = [liveAbortListeners(first.signal), liveAbortListeners(second.signal)]
    const a = runtime.run({ bindings: [], program: 'a()', signal: first.signal })
    const b = runtime.run({ bindings: [], program: 'b()', signal: second.signal })
    expect(live1.size).toBeGreaterThan(0)
    expect(live2.size).toBeGreaterThan(0)
    await tick()
    threads[0]!.send({ type: 'ready' })
    await tick()
    threads[0]!.done(1)
    expect((await a).value).toBe(1)
    await tick()
    threads[0]!.done(2)
    expect((await b).value).toBe(2)
    expect([live1.size, live2.size]).toEqual([0, 0])
    await runtime.dispose()
    // Failed before its thread booted.
    const booting = scriptedPlatform({ autoReady: false })
    const other = createSandboxRuntimeOn(booting.platform, { prespawn: 0 })
    const third = new AbortController()
    const live3 = liveAbortListeners(third.signal)
    const c = other.run({ bindings: [], program: 'c()', signal: third.signal })
    await tick()
    expect(live3.size).toBeGreaterThan(0)
    booting.threads[0]!.exit('crashed')
    expect((await c).error?.kind).toBe('worker-exit')
    expect(live3.size).toBe(0)
    // Ended by dispose while its thread boots (the thread never answers).
    const fourth = new AbortController()
    const live4 = liveAbortListeners(fourth.signal)
    const d = other.run({ bindings: [], program: 'd()', signal: fourth.signal })
    await tick()
    await other.dispose()
    expect((await d).error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
    expect(live4.size).toBe(0)
  })
})

describe('work bounds on a call’s arguments', () => {
  it('scanJsonText counts values (keys included) and nesting in one pass, stopping past its bounds', () => {
    const text = '{"a":[1,-2.5e3,true,null,"x\\\\\\"y"],"b":{"c":false}}'
    expect(scanJsonText(text, 0, text.length, 100, 10)).toEqual({ nodes: 12, depth: 2 })
    expect(scanJsonText(text, 0, text.length, 5, 10).nodes).toBe(6)
    expect(scanJsonText('[[[[1]]]]', 0, 9, 100, 2)).toEqual({ nodes: 3, depth: 3 })
    // Brackets inside strings are text, not structure.
    expect(scanJsonText('["[[[{{{"]', 0, 10, 100, 10)).toEqual({ nodes: 2, depth: 1 })
  })

  it('checkCallArgs refuses a call over 100,000 values or 100 levels, and nothing else', () => {
    const message = (args: unknown) => `{"type":"call","id":7,"global":"tools","name":"a\\"b"${args === undefined ? '' : `,"args":${JSON.stringify(args)}`}}`
    expect(() => checkCallArgs(message(new Array(99_999).fill(0)))).not.toThrow()
    expect(() => checkCallArgs(message(new Array(100_000).fill(0)))).toThrow(/^they hold more than 100000 JSON values/)
    expect(() => checkCallArgs(message(undefined))).not.toThrow()
    let deep: unknown = 1
    for (let i = 0; i < 101; i++) deep = [deep]
    expect(() => checkCallArgs(message(deep))).toThrow(/^they nest deeper than 100 levels/)
    // Not a call: a done message's value is capped elsewhere (maxValueBytes).
    expect(() => checkCallArgs(JSON.stringify({ type: 'done', value: new Array(200_000).fill(0) }))).not.toThrow()
  })

  it('adoptParsedJson freezes fresh JSON.parse output in place and records it as a snapshot', () => {
    const value = JSON.parse('{"a":[{"b":1}],"__proto__":{"x":2}}') as Record<string, unknown>
    expect(adoptParsedJson(value)).toEqual({ nodes: 10, depth: 3 })
    const text = JSON.stringify(value)
    expect(scanJsonText(text, 0, text.length, 100, 10)).toEqual({ nodes: 10, depth: 3 })
    expect(Object.isFrozen(value)).toBe(true)
    expect(Object.isFrozen((value.a as unknown[])[0])).toBe(true)
    expect(isJsonSnapshot(value)).toBe(true)
    expect(snapshotLosslessJson(value)).toBe(value)
    // A number lossless JSON refuses leaves it unrecorded: the snapshot reports it as usual.
    const lossy = JSON.parse('{"n":-0}') as unknown
    expect(adoptParsedJson(lossy)).toBeUndefined()
    expect(isJsonSnapshot(lossy)).toBe(false)
    expect(() => snapshotLosslessJson(lossy)).toThrow(/-0/)
  })
})
