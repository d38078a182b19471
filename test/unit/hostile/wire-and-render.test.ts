/**
 * Regression tests at the protocol level: the generated Node worker spoken to directly
 * (what exactly crosses to the host), and the host-side value measuring/rendering
 * against values built to make the host do unbounded work.
 */
import { MessageChannel, Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { WORKER_SOURCE } from '../../../platforms/node/_worker-source.js'
import { measureValueBytes, renderValue } from '../../../src/code-runtime/render.js'
import { MAX_ERROR_TEXT, parseWorkerMessage } from '../../../src/code-runtime/wire.js'

const workers: Worker[] = []
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.terminate()))
})

/** Boots the real generated worker, sends `start`, resolves with the first `done` message exactly as the host receives it. */
function runRaw(program: string, limits: { maxLogBytes?: number; maxValueBytes?: number } = {}): Promise<Record<string, unknown>> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, env: {}, stdout: true, stderr: true })
  workers.push(worker)
  const { port1, port2 } = new MessageChannel()
  worker.postMessage({ port: port2 }, [port2])
  return new Promise((resolve, reject) => {
    worker.once('error', reject)
    port1.on('message', (data: Record<string, unknown>) => {
      if (data.type === 'ready') {
        port1.postMessage({ type: 'start', program, namespaces: [], maxLogBytes: limits.maxLogBytes ?? 65_536, maxValueBytes: limits.maxValueBytes ?? 32_768 })
      } else if (data.type === 'done') {
        port1.close()
        resolve(data)
      }
    })
  })
}

describe('what the real worker sends', () => {
  it('an oversized completion value crosses as its rendering, marked oversized, not as the value', async () => {
    const done = await runRaw('return new Uint8Array(32 * 1024 * 1024)', { maxValueBytes: 1_000 })
    expect(parseWorkerMessage(done)).toMatchObject({ ok: true, message: { type: 'done', rendered: true, oversized: true } })
    expect(typeof done.value).toBe('string')
    expect((done.value as string).length).toBeLessThanOrEqual(1_001)
  })

  it('a value within maxValueBytes still crosses as a structured clone', async () => {
    const done = await runRaw('return { a: [1, 2], b: "x" }', { maxValueBytes: 1_000 })
    expect(done).toEqual({ type: 'done', value: { a: [1, 2], b: 'x' } })
  })

  it('error texts are cut in the worker, before the copy to the host', async () => {
    const done = await runRaw("const e = new Error('x'.repeat(5_000_000)); e.stack = 's'.repeat(5_000_000); throw e")
    const error = done.error as { name: string; message: string; stack: string }
    expect(error.message.length).toBeLessThanOrEqual(MAX_ERROR_TEXT + 1)
    expect(error.stack.length).toBeLessThanOrEqual(MAX_ERROR_TEXT + 1)
  })

  it('a revoked proxy thrown still yields exactly one well-formed done', async () => {
    const done = await runRaw('const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy')
    expect(parseWorkerMessage(done).ok).toBe(true)
    expect((done.error as { message: string }).message).toMatch(/^Uncaught/)
  })
})

describe('parseWorkerMessage and oversized', () => {
  it.each([
    ['oversized without rendered', { type: 'done', value: 'x', oversized: true }],
    ['oversized not true', { type: 'done', value: 'x', rendered: true, oversized: 1 }],
    ['oversized with a non-string value', { type: 'done', value: 1, rendered: true, oversized: true }],
  ])('rejects %s', (_what, data) => {
    expect(parseWorkerMessage(data).ok).toBe(false)
  })
})

describe('host-side measuring and rendering do bounded work on huge arrays', () => {
  /** An array proxy that counts how often its keys are enumerated and its elements read. */
  function countingArray(length: number) {
    const counts = { ownKeys: 0, reads: 0 }
    const target: unknown[] = []
    target.length = length
    const proxy = new Proxy(target, {
      ownKeys(t) {
        counts.ownKeys++
        return Reflect.ownKeys(t)
      },
      getOwnPropertyDescriptor(t, key) {
        if (key !== 'length') counts.reads++
        return key === 'length' ? Reflect.getOwnPropertyDescriptor(t, key) : { value: 1, writable: true, enumerable: true, configurable: true }
      },
    })
    return { proxy, counts }
  }

  it('measureValueBytes answers "over the limit" for a long array without enumerating it', () => {
    const { proxy, counts } = countingArray(10_000_000)
    expect(measureValueBytes(proxy, 1_000)).toBe(1_001)
    expect(counts).toEqual({ ownKeys: 0, reads: 0 })
  })

  it('renderValue reads only the elements it shows', () => {
    const { proxy, counts } = countingArray(10_000_000)
    expect(renderValue(proxy, { maxItems: 3 })).toBe('[1, 1, 1, … 9999997 more items]')
    expect(counts.ownKeys).toBe(0)
    expect(counts.reads).toBeLessThanOrEqual(4)
  })

  it('short arrays keep their holes skipped and extra keys shown', () => {
    const a: unknown[] = [1, , 3]
    ;(a as unknown as Record<string, unknown>).extra = 'e'
    expect(renderValue(a)).toBe('[1, 3, extra: "e"]')
  })
})
