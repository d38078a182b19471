/** Inline QuickJS (the edge's runtime): parked journals share `maxParkedBytes` (a run that does not fit keeps its VM and still finishes), and replays count against `maxReplayMs`. */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import type { CodeBindingCallOptions, ParkedRunState } from '../../../src/code-runtime/contract.js'
import { describeReplayBudgetContract, describeResumeCheckContract } from '../../contract/resume-contract.js'
import { until } from '../../support/poll.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const runtime = createQuickJsRuntime({ wasmModule, memoryMb: 32, parkAfterMs: 20, maxParkedBytes: 1024 * 1024 })
const others: ReturnType<typeof createQuickJsRuntime>[] = []
afterAll(async () => {
  await Promise.all([runtime, ...others].map((r) => r.dispose()))
})

const inline = (options: { parkAfterMs: number; maxReplayMs?: number }) => {
  const made = createQuickJsRuntime({ wasmModule, memoryMb: 32, ...options })
  others.push(made)
  return made
}
describeReplayBudgetContract('inline QuickJS', inline)
describeResumeCheckContract('inline QuickJS', inline)

it('a journal larger than the room left does not park; a small one does', async () => {
  const waiting: ((value: unknown) => void)[] = []
  const parks: string[] = []
  const functions = {
    blob: async () => 'x'.repeat(600_000),
    ask: (_args: unknown, options: CodeBindingCallOptions) => {
      const release = options.holdWallClock?.()
      return new Promise((resolve) => waiting.push(resolve)).finally(() => release?.())
    },
  }
  const run = (program: string, tag: string) =>
    runtime.run({ program, bindings: [{ global: 'tools', functions }], durable: { onPark: (_state: ParkedRunState) => parks.push(tag) } })
  const heavy = run('const b = await tools.blob(); return b.length + (await tools.ask({}))', 'heavy')
  const light = run('return await tools.ask({})', 'light')
  await until(() => parks.includes('light'), () => `the light run to park (parks: ${JSON.stringify(parks)})`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  expect(parks).toEqual(['light'])
  for (const decide of waiting.splice(0)) decide(1)
  expect((await heavy).value).toBe(600_001)
  expect((await light).value).toBe(1)
})

it('the byte budget counts what a waiting call holds: large arguments keep a run from parking', async () => {
  const waiting: ((value: unknown) => void)[] = []
  const parks: string[] = []
  const functions = {
    ask: (_args: unknown, options: CodeBindingCallOptions) => {
      const release = options.holdWallClock?.()
      return new Promise((resolve) => waiting.push(resolve)).finally(() => release?.())
    },
  }
  const run = (program: string, tag: string) =>
    runtime.run({ program, bindings: [{ global: 'tools', functions }], durable: { onPark: (_state: ParkedRunState) => parks.push(tag) } })
  const heavy = run(`return await tools.ask({ content: 'x'.repeat(1_200_000) })`, 'heavy')
  const light = run('return await tools.ask({})', 'light')
  await until(() => parks.includes('light'), () => `the light run to park (parks: ${JSON.stringify(parks)})`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  expect(parks).toEqual(['light'])
  for (const decide of waiting.splice(0)) decide(1)
  expect((await heavy).value).toBe(1)
  expect((await light).value).toBe(1)
})
