/**
 * Every approval request records its principal (issue 31): the execution input's
 * `principal` travels with the call into the request, a nested call carries its parent's,
 * and a broker over a store keeps it in the record (read back and validated like the rest).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createFileStore } from '../../../platforms/node/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { PendingApproval, ApprovalBroker } from '../../../src/approvals/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionToken } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { codeOf, nextRequest, setup, until } from './helpers.js'

const base = mkdtempSync(join(tmpdir(), 'toolyard-principal-'))
afterAll(() => rmSync(base, { recursive: true, force: true }))

/** A runtime whose `pay` asks, with `broker` deciding. */
function payRuntime(handler: ApprovalBroker['handler']): ToolRuntime {
  const runtime = createToolRuntime({ approval: handler })
  runtime.register(
    defineTool({
      name: 'pay',
      description: 'pays',
      parameters: { n: { type: 'number' } },
      output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
      execute: () => 'paid',
    }),
  )
  runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'pay' ? { kind: 'ask' } : d))
  return runtime
}

async function listedOne(broker: { pending(): readonly PendingApproval[] | Promise<readonly PendingApproval[]> }): Promise<PendingApproval> {
  return until(async () => (await broker.pending())[0], 'a listed request')
}

describe('the principal travels with the call into its approval request', () => {
  it('a direct call: the request records the input principal; a call without one records none', async () => {
    const f = setup()
    const controller = new AbortController()
    const asked = nextRequest(f.broker)
    const result = f.runtime.execute({ callId: 'c-1', name: 'pay', arguments: { n: 1 }, signal: controller.signal, principal: 'alice' })
    expect(await asked).toMatchObject({ callId: 'c-1', principal: 'alice' })
    await f.broker.decide((await f.broker.pending())[0]!.id, { decision: 'allow' })
    expect(codeOf(await result)).toBe('OK')
    const bare = nextRequest(f.broker)
    const second = f.runtime.execute({ callId: 'c-2', name: 'pay', arguments: { n: 1 }, signal: controller.signal })
    expect(Object.hasOwn(await bare, 'principal')).toBe(false)
    await f.broker.decide((await f.broker.pending())[0]!.id, { decision: 'deny' })
    await second
    await f.runtime.dispose()
  })

  it("a program's sub-calls carry its run's principal; a nested call cannot name another", async () => {
    const f = setup(undefined, { mode: 'code', codeRuntime: createInProcessRuntime() })
    const controller = new AbortController()
    const asked = nextRequest(f.broker)
    const run = f.runtime.execute({ callId: 'run-1', name: 'run_code', arguments: { code: 'return await tools.pay({ n: 2 })', description: 'p' }, signal: controller.signal, principal: 'bob' })
    expect(await asked).toMatchObject({ callId: 'run-1:code:1', parentCallId: 'run-1', principal: 'bob' })
    await f.broker.decide((await f.broker.pending())[0]!.id, { decision: 'allow' })
    expect(codeOf(await run)).toBe('OK')
    await f.runtime.dispose()
  })

  it("a nested call carries its parent's principal, whatever it names itself", async () => {
    const f = setup()
    const controller = new AbortController()
    f.runtime.register(
      defineTool({
        name: 'wrapper',
        description: 'calls pay nested',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
        isConcurrencySafe: () => true,
        execute: async (_args, exec) => {
          const inner = await f.runtime.execute({ callId: 'inner', name: 'pay', arguments: { n: 3 }, signal: exec.signal, parent: exec.token as ToolExecutionToken, principal: 'mallory' })
          return codeOf(inner)
        },
      }),
    )
    const nested = nextRequest(f.broker)
    const outer = f.runtime.execute({ callId: 'outer', name: 'wrapper', arguments: {}, signal: controller.signal, principal: 'carol' })
    expect(await nested).toMatchObject({ callId: 'inner', parentCallId: 'outer', principal: 'carol' })
    await f.broker.decide((await f.broker.pending())[0]!.id, { decision: 'deny' })
    await outer
    await f.runtime.dispose()
  })

  it.each([['a token-like string', 'tok en'], ['65 characters', 'a'.repeat(65)], ['a number', 7], ['empty', '']])('an input principal that is %s is a malformed input (nothing asked)', async (_what, principal) => {
    const f = setup()
    const result = await f.runtime.execute({ callId: 'bad', name: 'pay', arguments: { n: 1 }, signal: new AbortController().signal, principal } as never)
    expect(result.isError).toBe(true)
    expect(codeOf(result)).toBe('INVALID_EXECUTION')
    expect(await f.broker.pending()).toEqual([])
    await f.runtime.dispose()
  })
})

describe('a broker over a store keeps the principal in its record', () => {
  it('another process on the same file store lists the request with its principal', async () => {
    const dir = join(base, 'two-runtimes')
    const brokerA = createApprovalBroker({ store: createFileStore(dir), pollIntervalMs: 20 })
    const brokerB = createApprovalBroker({ store: createFileStore(dir), pollIntervalMs: 20 })
    const a = payRuntime(brokerA.handler)
    const result = a.execute({ callId: 'c-store', name: 'pay', arguments: { n: 4 }, signal: new AbortController().signal, principal: 'alice' })
    const seen = await listedOne(brokerB)
    expect(seen).toMatchObject({ callId: 'c-store', principal: 'alice' })
    expect(await brokerB.decide(seen.id, { decision: 'allow' })).toMatchObject({ ok: true, approval: { principal: 'alice' } })
    expect(codeOf(await result)).toBe('OK')
    await a.dispose()
    brokerA.dispose()
    brokerB.dispose()
  })

  it.each([['too long', 'a'.repeat(65)], ['not a label', 'tok en'], ['not a string', 7]])('a stored record whose principal is %s is skipped on read', async (_what, hostile) => {
    const store = createFileStore(join(base, `hostile-${String(hostile).length}-${typeof hostile}`))
    const broker = createApprovalBroker({ store, pollIntervalMs: 20 })
    const runtime = payRuntime(broker.handler)
    const controller = new AbortController()
    const result = runtime.execute({ callId: 'c-h', name: 'pay', arguments: { n: 5 }, signal: controller.signal, principal: 'alice' })
    await listedOne(broker)
    const page = await store.list('')
    let rewritten = 0
    for (const { key } of page.entries) {
      const entry = await store.get(key)
      if (entry === undefined || !entry.value.includes('"principal":"alice"')) continue
      const value = entry.value.replace('"principal":"alice"', `"principal":${JSON.stringify(hostile)}`)
      expect((await store.put(key, value, { ifVersion: entry.version })).ok).toBe(true)
      rewritten++
    }
    expect(rewritten).toBe(1)
    const fresh = createApprovalBroker({ store, pollIntervalMs: 20 })
    expect(await fresh.pending()).toEqual([])
    controller.abort()
    await result
    await runtime.dispose()
    broker.dispose()
    fresh.dispose()
  })
})

describe('every view of the execution carries the principal', () => {
  it('the gate, a tools/execute wrapper and the tool body see it', async () => {
    const f = setup()
    const seen: string[] = []
    f.runtime.on('tools/pre-execute', (d, exec) => (seen.push(`gate:${exec.name}:${exec.principal}`), d))
    f.runtime.on('tools/execute', async (exec, next) => (seen.push(`wrap:${exec.name}:${exec.principal}`), next()))
    f.runtime.register(
      defineTool({
        name: 'whoami',
        description: 'says who asked',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
        execute: (_args, exec) => (seen.push(`body:${exec.principal}`), 'ok'),
      }),
    )
    expect(codeOf(await f.runtime.execute({ callId: 'w-1', name: 'whoami', arguments: {}, signal: new AbortController().signal, principal: 'dana' }))).toBe('OK')
    expect(seen).toEqual(['gate:whoami:dana', 'wrap:whoami:dana', 'body:dana'])
    await f.runtime.dispose()
  })
})
