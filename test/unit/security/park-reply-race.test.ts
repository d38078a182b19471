/**
 * A decision that lands while a sandbox thread parks its run (stop 55, red team 3, finding 1).
 * The host asks the thread to park, the thread parks at once and answers; a call's result the
 * host posted in between reached the thread after the park, where the stopped VM dropped it:
 * the run waited for ever on a call that had run (an allowed write done, its result lost), and
 * the state handed to `onPark` (a durable run's store) named none of it. Now the host holds
 * what it sends while a park is asked; on `parked` it resumes the VM with it at once, and does
 * not hand on the lagging state. Real threads (QuickJS and MicroPython); the test holds the
 * thread's `parked` answer on its way to the host and decides in that moment.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import type { SandboxPlatform, SandboxRuntime } from '../../../src/code-runtime/sandbox-runtime.js'
import { nodeSandboxPlatform } from '../../../platforms/node/sandbox-runtime.js'
import { PYTHON_PLATFORM } from '../../../platforms/node/python-sandbox-runtime.js'
import type { CodeRunResult } from '../../../src/code-runtime/contract.js'
import { parkingBindings, until, valueOf } from '../../contract/parking-contract.js'

const runtimes: SandboxRuntime[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()))
})

/** `base`, with `onParked` run when a thread says it parked, before the pool hears it. */
function holdingParked(base: SandboxPlatform, onParked: () => Promise<void>): SandboxPlatform {
  return {
    ...base,
    spawn: () => {
      const thread = base.spawn()
      return {
        postMessage: (message) => thread.postMessage(message),
        onExit: (listener) => thread.onExit(listener),
        terminate: () => thread.terminate(),
        ...(thread.setActive === undefined ? {} : { setActive: (active: boolean) => thread.setActive!(active) }),
        onMessage: (listener) =>
          thread.onMessage((data) => {
            if ((data as { type?: unknown } | null)?.type === 'parked') void onParked().then(() => listener(data))
            else listener(data)
          }),
      }
    },
  }
}

const programs = {
  typescript: `const answer = await tools.ask({ q: 'pay?' }); const e = await tools.effect({ n: 2 }); return { answer, e }`,
  python: `answer = await tools.ask({ 'q': 'pay?' })\ne = await tools.effect({ 'n': 2 })\nreturn { 'answer': answer, 'e': e }`,
}

describe('a decision that lands while the thread parks the run', () => {
  for (const [language, base] of [['typescript', nodeSandboxPlatform()], ['python', PYTHON_PLATFORM]] as const) {
    it(`${language}: the result reaches the program, which goes on; the lagging state is not handed on`, async () => {
      const b = parkingBindings()
      let first = true
      const platform = holdingParked(base, async () => {
        if (!first) return
        first = false
        b.decide('yes')
        // The result is posted (before the fix: to the thread, whose VM has stopped) before the pool hears of the park.
        await new Promise((resolve) => setTimeout(resolve, 200))
      })
      const runtime = createSandboxRuntimeOn(platform, { memoryMb: 32, prespawn: 0, parkAfterMs: 50, maxConcurrentRuns: 1 })
      runtimes.push(runtime)
      const pending = runtime.run(b.request(programs[language]))
      const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 8000))
      const result = await Promise.race([pending, hung])
      expect(result, 'the run waited on a call whose result was dropped').not.toBe('hung')
      expect(valueOf(result as CodeRunResult)).toEqual({ answer: 'yes', e: { done: { n: 2 } } })
      expect(first).toBe(false)
      expect(b.ran).toEqual(['ask:{"q":"pay?"}', 'effect:{"n":2}'])
      // The state the thread parked names `ask` as waiting, and `ask` had its answer: nobody may resume from it.
      expect(b.parks).toEqual([])
      await until(() => runtime.load().running === 0 && runtime.load().parked === 0)
    }, 30_000)
  }
})
