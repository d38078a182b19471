import { afterEach, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import type { NodeWorkerRuntime } from '../../../platforms/node/index.js'

/**
 * Program code attacking the port protocol from inside a real worker: it can reach
 * `require('worker_threads')`, patch prototypes and post junk, but none of it reaches
 * the host's private port or changes the host's accounts.
 */
const created: NodeWorkerRuntime[] = []
const make = (options: Parameters<typeof createNodeWorkerRuntime>[0] = {}) => {
  const runtime = createNodeWorkerRuntime({ computeMs: 5_000, maxWallMs: 20_000, ...options })
  created.push(runtime)
  return runtime
}
afterEach(async () => {
  await Promise.all(created.splice(0).map((r) => r.dispose()))
})

describe('hostile programs vs the port protocol', () => {
  it('messages posted on parentPort never reach the host protocol', async () => {
    const calls: unknown[] = []
    const result = await make().run({
      program: [
        "const { parentPort } = require('worker_threads')",
        "parentPort.postMessage({ type: 'done', value: 'forged' })",
        "parentPort.postMessage({ type: 'log', source: 'console', level: 'log', text: 'forged log' })",
        "parentPort.postMessage({ type: 'call', id: 99, global: 'tools', name: 'secret', args: 1 })",
        "parentPort.postMessage('junk'); parentPort.postMessage(null); parentPort.postMessage([1, 2])",
        "await new Promise((r) => setTimeout(r, 50))",
        "return 'real'",
      ].join('\n'),
      bindings: [{ global: 'tools', functions: { secret: async (a) => calls.push(a) } }],
    })
    expect(result.value).toBe('real')
    expect(result.logs).toEqual([])
    expect(calls).toEqual([])
  })

  it('the private port is not reachable from globals, workerData or the parent port', async () => {
    const result = await make().run({
      program: [
        "const wt = require('worker_threads')",
        "const found = Object.getOwnPropertyNames(globalThis).filter((k) => { try { return globalThis[k] instanceof wt.MessagePort } catch { return false } })",
        'let received = 0',
        "wt.parentPort.on('message', () => received++)",
        'await new Promise((r) => setTimeout(r, 30))',
        'return { found, workerData: wt.workerData ?? null, received }',
      ].join('\n'),
      bindings: [],
    })
    expect(result.value).toEqual({ found: [], workerData: null, received: 0 })
  })

  it('patching MessagePort.prototype.postMessage cannot forge or hide protocol messages', async () => {
    const result = await make().run({
      program: [
        "const wt = require('worker_threads')",
        'const original = wt.MessagePort.prototype.postMessage',
        "wt.MessagePort.prototype.postMessage = function (m) { return original.call(this, { type: 'done', value: 'hijacked' }) }",
        "console.log('still logged')",
        "return await tools.echo('through')",
      ].join('\n'),
      bindings: [{ global: 'tools', functions: { echo: async (a) => a } }],
    })
    expect(result.value).toBe('through')
    expect(result.logs.map((l) => l.text)).toEqual(['still logged'])
  })

  it('replacing console and the namespace from the program only affects the program', async () => {
    const result = await make().run({
      program: "console.log('before')\nconst real = tools\nglobalThis.tools = { ping: async () => 'fake' }\nreturn [await real.ping(), await tools.ping()]",
      bindings: [{ global: 'tools', functions: { ping: async () => 'pong' } }],
    })
    expect(result.value).toEqual(['pong', 'fake'])
  })

  it('the namespace is frozen and has a null prototype', async () => {
    const result = await make().run({
      program: "'use strict'\nlet frozen = false\ntry { (tools as any).extra = 1 } catch { frozen = true }\nreturn [Object.isFrozen(tools), Object.getPrototypeOf(tools), frozen]",
      bindings: [{ global: 'tools', functions: { a: async () => 1 } }],
    })
    expect(result.value).toEqual([true, null, true])
  })

  it('a name the host did not bind does not exist in the namespace', async () => {
    const result = await make().run({
      program: "try { await (tools as any).missing() } catch (e) { return String(e) }",
      bindings: [{ global: 'tools', functions: { present: async () => 1 } }],
    })
    expect(result.value).toMatch(/TypeError/)
  })

  it('spamming console past the cap cannot grow the host log', async () => {
    const result = await make({ maxLogBytes: 1_000 }).run({
      program: "for (let i = 0; i < 100000; i++) console.log('spam '.repeat(20))\nreturn 'done'",
      bindings: [],
    })
    expect(result.value).toBe('done')
    expect(result.logs.reduce((n, l) => n + l.text.length, 0)).toBeLessThan(1_200)
  })

  it('arguments that cannot be cloned reject that call only', async () => {
    const result = await make().run({
      program: "try { await tools.echo({ f() {} }) } catch (e) { return [e.name, /cannot be sent/.test(e.message), await tools.echo(2)] }",
      bindings: [{ global: 'tools', functions: { echo: async (a) => a } }],
    })
    expect(result.value).toEqual(['TypeError', true, 2])
  })

  // This runtime is not a boundary: Node's own handle list hands a program the private
  // port. What the host promises is that nothing it cannot read leaves a run hanging.
  it('a message the host cannot deserialize ends the run at once, not at the wall-clock ceiling', async () => {
    const started = Date.now()
    // The worker's stack is large enough to serialize 100,000 levels; no host thread's
    // (1 MB on a main thread, 4 MB on a worker) deserializes them.
    const result = await make({ maxWallMs: 30_000, stackSizeMb: 64 }).run({
      program: [
        "const ports = process._getActiveHandles().filter((h) => h instanceof require('worker_threads').MessagePort)",
        'let deep = 1',
        'for (let i = 0; i < 100_000; i++) deep = [deep]',
        'for (const port of ports) port.postMessage(deep)',
        'await new Promise(() => {})',
      ].join('\n'),
      bindings: [],
    })
    expect(result.error).toEqual({ kind: 'exception', message: expect.stringMatching(/^a message from the worker could not be read \(.+\)$/) })
    expect(Date.now() - started).toBeLessThan(15_000)
  })
})
