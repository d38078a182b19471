/**
 * Approval inside Code Mode, through a real registry and the in-process test
 * CodeRuntime. Not run in workerd: that runtime compiles programs with the
 * AsyncFunction constructor, which workerd forbids (see vitest.workerd.config.ts).
 */
import { describe, expect, it } from 'vitest'
import type { ApprovalBroker } from '../../../src/approvals/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { codeOf, nextRequest, programResult, runCode, setup, tick, until } from './helpers.js'

function codeModeSetup(timeoutMs?: number) {
  const fixture = setup(timeoutMs === undefined ? undefined : { timeoutMs }, { mode: 'code', codeRuntime: createInProcessRuntime() })
  // Sub-calls whose result was published, in order (run_code itself excluded).
  const published: string[] = []
  fixture.runtime.on('tools/result', (execution) => {
    if (execution.name !== 'run_code') published.push(execution.name)
  })
  return { ...fixture, published }
}

async function decideNext(broker: ApprovalBroker, asked: ReturnType<typeof nextRequest>, decision: 'allow' | 'deny', reason?: string) {
  const request = await asked
  expect((await broker.decide(request.id, reason === undefined ? { decision } : { decision, reason })).ok).toBe(true)
  return request
}

describe('approval inside Code Mode (real registry, in-process CodeRuntime)', () => {
  it('three concurrency-safe siblings finish while the asking sub-call waits; then it is allowed', async () => {
    const { broker, runtime, published, ran } = codeModeSetup()
    const asked = nextRequest(broker)
    const { callId, result } = runCode(
      runtime,
      `const [paid, ...reads] = await Promise.all([tools.pay({ n: 1 }), tools.read({ n: 1 }), tools.read({ n: 2 }), tools.read({ n: 3 })])
       return { paid, reads }`,
    )
    const request = await asked
    expect(request).toMatchObject({ callId: `${callId}:code:1`, name: 'pay', arguments: { n: 1 } })
    await until(() => published.length === 3)
    // The siblings' results are published while the payment still waits for a person.
    expect(published).toEqual(['read', 'read', 'read'])
    expect((await broker.pending()).map((p) => p.id)).toEqual([request.id])
    expect(ran).toEqual(['read:{"n":1}', 'read:{"n":2}', 'read:{"n":3}'])

    await broker.decide(request.id, { decision: 'allow' })
    expect(programResult(await result)).toEqual({ paid: 'pay done', reads: ['read done', 'read done', 'read done'] })
    expect(published).toEqual(['read', 'read', 'read', 'pay'])
  })

  it('a denial rejects only that tools.x() with a ToolCallError the program catches', async () => {
    const { broker, runtime, ran } = codeModeSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(
      runtime,
      `const read = await tools.read({ n: 1 })
       try { await tools.pay({ n: 9 }) } catch (e) { return { read, name: e.name, tool: e.toolName, message: e.message } }
       return 'paid?'`,
    )
    await decideNext(broker, asked, 'deny', 'over budget')
    const value = programResult(await result) as { read: string; name: string; tool: string; message: string }
    expect(value).toMatchObject({ read: 'read done', name: 'ToolCallError', tool: 'pay' })
    expect(value.message).toContain('pay was denied by a person: over budget')
    expect(ran).toEqual(['read:{"n":1}'])
  })

  it('a denial the program leaves uncaught fails the run with who denied it, and no language note', async () => {
    const { broker, runtime } = codeModeSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, `await tools.pay({ n: 1 })\nreturn 'paid'`)
    await decideNext(broker, asked, 'deny', 'over budget')
    const settled = await result
    expect(codeOf(settled)).toBe('CODE_RUN_FAILED')
    const message = settled.isError ? settled.error.message : ''
    expect(message).toContain('ToolCallError: pay was denied by a person: over budget')
    expect(message).not.toContain('run_code runs')
  })

  it('an expired request rejects the sub-call with a message that says it expired', async () => {
    const { broker, runtime, events } = codeModeSetup(40)
    const { result } = runCode(runtime, `try { await tools.pay({}) } catch (e) { return e.message }`)
    const message = programResult(await result) as string
    expect(message).toContain('pay was denied by timeout: nobody decided within 40 ms')
    expect(events.map((e) => e.type)).toEqual(['requested', 'expired'])
    expect(await broker.pending()).toEqual([])
  })

  it('an exclusive asking call still blocks the calls submitted after it until it is decided', async () => {
    const { broker, runtime, ran } = codeModeSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(
      runtime,
      `const w = tools.write_file({ n: 1 }); const r = tools.read({ n: 2 })
       return [await w, await r]`,
    )
    const request = await asked
    await tick(30)
    expect(ran).toEqual([])
    await broker.decide(request.id, { decision: 'allow' })
    expect(programResult(await result)).toEqual(['write_file done', 'read done'])
    expect(ran).toEqual(['write_file:{"n":1}', 'read:{"n":2}'])
  })

  it('aborting the run withdraws the waiting sub-call\'s request', async () => {
    const { broker, runtime, events, ran } = codeModeSetup()
    const controller = new AbortController()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, `return await tools.pay({})`, controller)
    const request = await asked
    controller.abort()
    const settled = await result
    expect(codeOf(settled)).toBe('CODE_RUN_FAILED')
    expect(await broker.pending()).toEqual([])
    expect(events.map((e) => e.type)).toEqual(['requested', 'withdrawn'])
    expect(await broker.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_WITHDRAWN' })
    expect(ran).toEqual([])
  })
})
