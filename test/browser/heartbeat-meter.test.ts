import { afterEach, describe, expect, it } from 'vitest'
import { HeartbeatMeter } from '../../platforms/browser/heartbeat-meter.js'

/**
 * The heartbeat meter against a real Web Worker: busy time in the worker's event loop
 * is charged, idle time is not, and a loop that never yields is charged while it runs.
 */
let worker: Worker | undefined
let meter: HeartbeatMeter | undefined

afterEach(() => {
  meter?.stop()
  worker?.terminate()
  meter = undefined
  worker = undefined
})

function next(target: Worker): Promise<unknown> {
  return new Promise((resolve) => target.addEventListener('message', (e) => resolve(e.data), { once: true }))
}

async function setup(): Promise<{ worker: Worker; meter: HeartbeatMeter }> {
  worker = new Worker(new URL('./fixtures/spin-worker.js', import.meta.url), { type: 'module' })
  const channel = new MessageChannel()
  const attached = next(worker)
  worker.postMessage({ heartbeat: channel.port2 }, [channel.port2])
  expect(await attached).toBe('attached')
  meter = new HeartbeatMeter(channel.port1, { intervalMs: 5, busyThresholdMs: 2 })
  meter.start()
  return { worker, meter }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('HeartbeatMeter', () => {
  it('charges nothing much while the worker idles', async () => {
    const { meter } = await setup()
    await sleep(1_000)
    expect(meter.answered).toBeGreaterThan(10)
    // A meter that charged idle time would show ~1,000 ms; the wide margin absorbs late pings on a loaded machine.
    expect(meter.computeMs()).toBeLessThan(500)
  })

  it('charges a busy stretch of the worker loop', async () => {
    const { worker, meter } = await setup()
    const spun = next(worker)
    worker.postMessage({ spinMs: 1_000 })
    expect(await spun).toBe('spun')
    await sleep(30)
    // About the spin: not much less (it was busy throughout), not double (late pings after it are not charged twice).
    expect(meter.computeMs()).toBeGreaterThan(700)
    expect(meter.computeMs()).toBeLessThan(2_000)
  })

  it('charges a loop that has not answered yet (provisionally)', async () => {
    const { worker, meter } = await setup()
    const spinning = next(worker)
    worker.postMessage({ spinMs: 3_000, announce: true })
    // Timed from the spin's start (on a loaded machine the request can reach the worker late).
    expect(await spinning).toBe('spinning')
    await sleep(1_000)
    // Nothing answered during the spin, yet the meter already counts it (half the wait: the host's own pings may run late).
    expect(meter.computeMs()).toBeGreaterThan(500)
  })

  it('stop() closes the port and ignores later answers', async () => {
    const { meter } = await setup()
    await sleep(50)
    meter.stop()
    const frozen = meter.answered
    await sleep(50)
    expect(meter.answered).toBe(frozen)
  })
})
