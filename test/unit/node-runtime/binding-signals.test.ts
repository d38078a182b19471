import { afterAll, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'

const runtime = createNodeWorkerRuntime()
afterAll(() => runtime.dispose())

describe('binding call signals', () => {
  it('lets 30 concurrent bindings listen to the run signal without a MaxListenersExceeded warning; it fires at settlement', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`)
    process.on('warning', onWarning)
    const signals: AbortSignal[] = []
    try {
      const result = await runtime.run({
        program: 'const all = await Promise.all(Array.from({ length: 30 }, (_, i) => tools.wait({ i }))); return all.length',
        bindings: [
          {
            global: 'tools',
            functions: {
              wait: (_args, { signal }) => {
                signals.push(signal)
                // A well-behaved binding listens for cancellation on the signal it was given.
                signal.addEventListener('abort', () => undefined)
                return new Promise((resolve) => setTimeout(() => resolve(1), 20))
              },
            },
          },
        ],
      })
      expect(result.value).toBe(30)
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setTimeout(resolve, 10))
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings.filter((w) => w.includes('MaxListenersExceeded'))).toEqual([])
    expect(signals).toHaveLength(30)
    expect(signals.every((s) => s.aborted)).toBe(true)
  })
})
