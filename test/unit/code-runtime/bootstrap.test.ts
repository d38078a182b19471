/**
 * The sandbox bootstrap as a unit: what it posts for each outcome, its console shim and
 * format directives, its binding calls and replies, and its limits. Every runtime runs a
 * bundled copy of this module, so these tests are what fails when the source is wrong.
 */
import { describe, expect, it } from 'vitest'
import { strictJson } from '../../../src/code-runtime/in-sandbox/bootstrap.js'
import type { WireEndpoint } from '../../../src/code-runtime/wire.js'
import { ToolCallError } from '../../../src/errors.js'
import { boot, texts } from './bootstrap-harness.js'
import { until } from '../../support/poll.js'

const log1 = async (program: string, maxLogBytes?: number) => texts(await boot(program, maxLogBytes === undefined ? {} : { maxLogBytes }))

describe('bootstrap: the outcome it posts', () => {
  it('posts ready before anything, then exactly one done carrying the JSON value', async () => {
    const run = await boot("return { a: [1, 'x', null, true], b: { c: 2.5 } }")
    expect(run.posted.map((m) => m.type)).toEqual(['ready', 'done'])
    expect(run.done).toEqual({ type: 'done', value: { a: [1, 'x', null, true], b: { c: 2.5 } } })
  })

  it('posts done without a value key for undefined, and for a value whose JSON is undefined', async () => {
    expect(Object.keys((await boot('return undefined')).done)).toEqual(['type'])
    expect(Object.keys((await boot('return { toJSON() { return undefined } }')).done)).toEqual(['type'])
  })

  it('sends a Date as its ISO string (toJSON applies)', async () => {
    expect((await boot("return new Date('2020-01-02T03:04:05.000Z')")).done.value).toBe('2020-01-02T03:04:05.000Z')
  })

  it.each([
    ['() => 1', 'a function is not JSON'],
    ['Symbol("s")', 'a symbol is not JSON'],
    ['[NaN]', 'NaN is not JSON'],
    ['{ x: -Infinity }', '-Infinity is not JSON'],
    ['new Map()', 'a Map, Set, RegExp or binary value is not JSON'],
    ['{ s: new Set() }', 'a Map, Set, RegExp or binary value is not JSON'],
    ['/x/', 'a Map, Set, RegExp or binary value is not JSON'],
    ['new ArrayBuffer(2)', 'a Map, Set, RegExp or binary value is not JSON'],
    ['new Uint8Array(2)', 'a Map, Set, RegExp or binary value is not JSON'],
  ])('fails a run returning %s, naming why', async (expr, why) => {
    const { done } = await boot(`return ${expr}`)
    expect(done).toEqual({
      type: 'done',
      error: {
        name: 'TypeError',
        message: `the program's return value cannot be sent back as JSON (${why}); return plain data: objects, arrays, strings, finite numbers, booleans, null`,
      },
    })
  })

  it('fails a run whose value JSON rejects with a plain error, quoting its message', async () => {
    const { done } = await boot('return { n: 1n }')
    expect(done.error).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/^the program's return value cannot be sent back as JSON \(.*BigInt.*\); return plain data/) })
  })

  it('sends a value larger than maxValueBytes as its rendering, cut to the cap, marked oversized', async () => {
    const { done } = await boot("return { text: 'x'.repeat(500), deep: [[[[[[[[1]]]]]]]] }", { maxValueBytes: 100 })
    expect(done.rendered).toBe(true)
    expect(done.oversized).toBe(true)
    // The rendering is cut at maxValueBytes UTF-8 bytes (the host adds the mark).
    expect(done.value).toBe(`{ text: "${'x'.repeat(100 - 9)}`)
    const deep = await boot("return { pad: 'y'.repeat(200), deep: [[[[[[[[[[1]]]]]]]]]] }", { maxValueBytes: 150 })
    expect(deep.done.value).toBe(`{ pad: "${'y'.repeat(150 - 8)}`)
    const nested = await boot('return [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]', { maxValueBytes: 10 })
    expect(nested.done.value).toBe('[[[[[[[[[[')
  })

  it('sends a value exactly at maxValueBytes whole', async () => {
    // measureValueBytes('abcdefgh') is its UTF-8 length plus two quotes: 10.
    expect((await boot("return 'abcdefgh'", { maxValueBytes: 10 })).done).toEqual({ type: 'done', value: 'abcdefgh' })
    expect((await boot("return 'abcdefghi'", { maxValueBytes: 10 })).done).toEqual({ type: 'done', value: 'abcdefghi', rendered: true, oversized: true })
  })

  it('an oversized value renders 32 levels deep (the object is level 0)', async () => {
    const program = "let v = 1; for (let i = 0; i < 40; i++) v = [v]; return { v, pad: 'z'.repeat(300) }"
    const { done } = await boot(program, { maxValueBytes: 200 })
    const head = `{ v: ${'['.repeat(31)}[Array]${']'.repeat(31)}, pad: "`
    expect(done.value).toBe(`${head}${'z'.repeat(200 - head.length)}`)
  })
})

describe('bootstrap: errors as data', () => {
  it('a thrown Error crosses as name, message and a stack remapped to the program lines', async () => {
    const { done } = await boot("const a = 1\n\nthrow new RangeError('bad ' + a)")
    const error = done.error as { name: string; message: string; stack: string }
    expect(error.name).toBe('RangeError')
    expect(error.message).toBe('bad 1')
    expect(error.stack).toMatch(/program\.ts:3:7/)
    expect(error.stack).not.toMatch(/program\.ts:5:/)
  })

  it('remaps only program.ts frames and never below line 1', async () => {
    const { done } = await boot("throw { name: 'N', message: 'm', stack: 'at f (programXts:5:1) at g (program.ts:5:2) at h (program.ts:1:3)' }")
    expect(done.error).toEqual({ name: 'N', message: 'm', stack: 'at f (programXts:5:1) at g (program.ts:3:2) at h (program.ts:1:3)' })
  })

  it('an object with a message but no name or stack is an Error without a stack key', async () => {
    const { done } = await boot("throw { message: 'just a message' }")
    expect(done.error).toEqual({ name: 'Error', message: 'just a message' })
    expect(Object.keys(done.error as object)).toEqual(['name', 'message'])
  })

  it('an Error whose message is not a string has an empty message', async () => {
    const { done } = await boot("const e = new TypeError('x'); Object.defineProperty(e, 'message', { value: 42 }); e.stack = undefined; throw e")
    expect(done.error).toEqual({ name: 'TypeError', message: '' })
  })

  it('reads a throwing getter as absent', async () => {
    const { done } = await boot("throw { get name() { throw new Error('no') }, message: 'kept', get stack() { throw new Error('no') } }")
    expect(done.error).toEqual({ name: 'Error', message: 'kept' })
  })

  it('a thrown non-error renders as "Uncaught <value>", strings quoted', async () => {
    expect((await boot("throw 'boom'")).done.error).toEqual({ name: 'Error', message: 'Uncaught "boom"' })
    expect((await boot('throw 42')).done.error).toEqual({ name: 'Error', message: 'Uncaught 42' })
    expect((await boot('throw { code: 7 }')).done.error).toEqual({ name: 'Error', message: 'Uncaught { code: 7 }' })
    expect((await boot('throw null')).done.error).toEqual({ name: 'Error', message: 'Uncaught null' })
    expect((await boot(`throw '${'q'.repeat(3_000)}'`)).done.error).toEqual({ name: 'Error', message: `Uncaught "${'q'.repeat(1_999)}…` })
  })

  it('a thrown proxy whose traps throw still yields error data', async () => {
    const program = "throw new Proxy({}, { get() { throw new Error('trap') }, getPrototypeOf() { throw new Error('trap') }, getOwnPropertyDescriptor() { throw new Error('trap') }, ownKeys() { throw new Error('trap') } })"
    const { done } = await boot(program)
    expect(done.error).toEqual({ name: 'Error', message: 'Uncaught [Unrenderable]' })
  })

  it('cuts a name, message or stack longer than 16,384 characters', async () => {
    const { done } = await boot("const e = new Error('m'.repeat(20000)); e.name = 'n'.repeat(16384); e.stack = 's'.repeat(16385); throw e")
    const error = done.error as Record<string, string>
    expect(error.name).toBe('n'.repeat(16384))
    expect(error.message).toBe(`${'m'.repeat(16384)}…`)
    expect(error.stack).toBe(`${'s'.repeat(16384)}…`)
  })

  it('a program that does not compile ends with a SyntaxError', async () => {
    const { done } = await boot('return )')
    expect((done.error as { name: string }).name).toBe('SyntaxError')
  })

  it('a rejected promise ends the run with its reason', async () => {
    expect((await boot("await null; throw new Error('later')")).done.error).toMatchObject({ name: 'Error', message: 'later' })
  })
})

describe('bootstrap: the console shim', () => {
  it('maps each method to its level and prefixes trace', async () => {
    const run = await boot("console.log('l'); console.info('i'); console.warn('w'); console.error('e'); console.debug('d'); console.trace('t', 1); console.dir({ a: 1 }); console.table([1])")
    expect(run.logs).toEqual([
      { level: 'log', text: 'l' },
      { level: 'info', text: 'i' },
      { level: 'warn', text: 'w' },
      { level: 'error', text: 'e' },
      { level: 'debug', text: 'd' },
      { level: 'debug', text: 'Trace: t 1' },
      { level: 'log', text: '{ a: 1 }' },
      { level: 'log', text: '[1]' },
    ])
    expect(run.posted.every((m) => m.type !== 'log' || m.source === 'console')).toBe(true)
  })

  it('assert logs only when the condition is falsy', async () => {
    const run = await boot("console.assert(1 === 1, 'never'); console.assert(0, 'x is', 2); console.assert(false)")
    expect(run.logs).toEqual([
      { level: 'error', text: 'Assertion failed x is 2' },
      { level: 'error', text: 'Assertion failed' },
    ])
  })

  it('has the grouping and timing methods as silent no-ops, every method enumerable, on a null prototype', async () => {
    const program = [
      "for (const m of ['group', 'groupEnd', 'groupCollapsed', 'time', 'timeEnd', 'timeLog', 'count', 'countReset', 'clear']) if (console[m]('x') !== undefined) throw new Error(m)",
      'return [Object.keys(console), Object.getPrototypeOf(console) === null]',
    ].join('\n')
    const run = await boot(program)
    expect(run.logs).toEqual([])
    expect(run.done.value).toEqual([
      ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dir', 'table', 'assert', 'group', 'groupEnd', 'groupCollapsed', 'time', 'timeEnd', 'timeLog', 'count', 'countReset', 'clear'],
      true,
    ])
  })

  it('installs console and ToolCallError as writable, configurable, non-enumerable globals', async () => {
    const program = "const d = (n) => { const x = Object.getOwnPropertyDescriptor(globalThis, n); return [x.writable, x.enumerable, x.configurable] }\nreturn [d('console'), d('ToolCallError'), ToolCallError.name]"
    expect((await boot(program)).done.value).toEqual([[true, false, true], [true, false, true], 'ToolCallError'])
  })

  it('formats console arguments the way util.format does', async () => {
    expect(await log1("console.log('a%sb', 'X'); console.log('%s|%s', 'only'); console.log('%d%%', 5); console.log('100%')")).toEqual(['aXb', 'only|%s', '5%', '100%'])
    expect(await log1("console.log('%d %i', 3.7, 3.7); console.log('%d %i', '42.9', '42.9'); console.log('%d %i', {}, 10n); console.log('%d', 10n)")).toEqual(['3.7 3', '42.9 42', 'NaN 10n', '10n'])
    expect(await log1("console.log('%f %f %f', 1.5, '2.5abc', {})")).toEqual(['1.5 2.5 NaN'])
    expect(await log1("console.log('%c[%s]', 'color: red', { a: 'q' }); console.log('%o %O %j', 'x', [1], null)")).toEqual(['[{ a: "q" }]', '"x" [1] null'])
    expect(await log1("console.log('%s', 'x', 'y', 3); console.log('%z', 1); console.log('plain', 'x', 2)")).toEqual(['x y 3', '%z 1', 'plain x 2'])
  })

  it('renders a first argument that is not a string, and nothing for no arguments', async () => {
    expect(await log1("console.log({ a: 'x' }, 'raw'); console.log(); console.log(null, undefined)")).toEqual(['{ a: "x" } raw', '', 'null undefined'])
  })

  it('renders top-level arguments six levels deep and %o / %s ones four', async () => {
    const program = "const o = { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } }\nconsole.log(o)\nconsole.log('%o', o)\nconsole.log('%s', o)"
    expect(await log1(program)).toEqual([
      '{ a: { b: { c: { d: { e: { f: [Object] } } } } } }',
      '{ a: { b: { c: { d: [Object] } } } }',
      '{ a: { b: { c: { d: [Object] } } } }',
    ])
  })

  it('stops sending lines once maxLogBytes is exceeded, and cuts a line to what remains', async () => {
    // 'abc' costs 4 bytes (text + newline): lines are sent while the running total is within 10.
    expect(await log1("for (const s of ['abc', 'def', 'ghi', 'jkl']) console.log(s)", 10)).toEqual(['abc', 'def', 'ghi'])
    expect(await log1("console.log('hello'); console.log('world')", 0)).toEqual(['h…'])
    expect(await log1("console.log('ab', 'cdefgh', 'ijk')", 5)).toEqual(['ab cdefgh'])
    expect(await log1("console.log('é'.repeat(3)); console.log('x')", 6)).toEqual(['ééé'])
    expect(await log1("console.log('é'.repeat(3)); console.log('x')", 7)).toEqual(['ééé', 'x'])
  })

  it('without a log limit, still cuts one line at a million characters', async () => {
    const run = await boot("console.log('x'.repeat(1_000_005))", { start: { type: 'start', program: "console.log('x'.repeat(1_000_005))", namespaces: [] } })
    expect(run.logs).toHaveLength(1)
    expect(run.logs[0]!.text).toBe(`${'x'.repeat(1_000_000)}…`)
  })

  it('sends no line after the outcome', async () => {
    const run = await boot("setTimeout(() => console.log('late'), 0)\nconsole.log('early')")
    expect(texts(run)).toEqual(['early'])
    expect(run.posted.at(-1)!.type).toBe('done')
  })
})

describe('bootstrap: binding calls', () => {
  const namespaces = [{ global: 'tools', names: ['add', 'fail', 'named'] }]

  it('posts numbered calls and resolves each with its reply', async () => {
    const run = await boot('const a = await tools.add({ x: 1 })\nconst b = await tools.add({ x: 2 })\nreturn [a, b]', {
      namespaces,
      onCall: (call, reply) => reply({ type: 'reply', id: call.id, ok: true, value: (call.args as { x: number }).x * 10 }),
    })
    expect(run.calls).toEqual([
      { type: 'call', id: 1, global: 'tools', name: 'add', args: { x: 1 } },
      { type: 'call', id: 2, global: 'tools', name: 'add', args: { x: 2 } },
    ])
    expect(run.done.value).toEqual([10, 20])
  })

  it('a failed reply with a tool name rejects with a ToolCallError, without one with an Error', async () => {
    const program = [
      'const out = []',
      "try { await tools.fail() } catch (e) { out.push([e instanceof ToolCallError, e.name, e.toolName, e.message]) }",
      "try { await tools.fail() } catch (e) { out.push([e instanceof ToolCallError, e.name, e.message]) }",
      "try { await tools.fail() } catch (e) { out.push([e.message]) }",
      'return out',
    ].join('\n')
    let n = 0
    const replies = [
      { ok: false, message: 'denied', toolName: 'fail' },
      { ok: false, message: 'plain' },
      { ok: false, message: 17 },
    ]
    const run = await boot(program, { namespaces, onCall: (call, reply) => reply({ type: 'reply', id: call.id, ...replies[n++] }) })
    expect(run.done.value).toEqual([[true, 'ToolCallError', 'fail', 'denied'], [false, 'Error', 'plain'], ['binding call failed']])
    expect(ToolCallError).toBeDefined()
  })

  it('ignores replies for unknown ids, replies without a numeric id, and a second reply', async () => {
    const run = await boot('return await tools.add()', {
      namespaces,
      onCall: (call, reply) => {
        reply({ type: 'reply', id: 99, ok: true, value: 'wrong id' })
        reply({ type: 'reply', id: String(call.id), ok: true, value: 'string id' })
        reply({ type: 'reply', id: call.id, ok: true, value: 'right' })
        reply({ type: 'reply', id: call.id, ok: false, message: 'second' })
      },
    })
    expect(run.done).toEqual({ type: 'done', value: 'right' })
  })

  it('rejects a call whose arguments cannot be cloned, without posting it', async () => {
    const run = await boot("try { await tools.add({ f() {} }) } catch (e) { return [e.name, e.message] }", { namespaces })
    expect(run.calls).toEqual([])
    expect(run.done.value).toEqual(['TypeError', expect.stringMatching(/^tools\.add: the arguments cannot be sent to the host \(.+\)$/)])
  })

  it('a call whose post throws a non-error still rejects, and the next call gets the next id', async () => {
    let throwOnce = true
    const run = await boot("try { await tools.add(1) } catch (e) { var m = e.message }\nreturn [m, await tools.add(2)]", {
      namespaces,
      wrap: (port) => ({
        ...bind(port),
        postMessage(message: unknown) {
          if ((message as { type?: string }).type === 'call' && throwOnce) {
            throwOnce = false
            throw 'nope'
          }
          port.postMessage(message)
        },
      }),
      onCall: (call, reply) => reply({ type: 'reply', id: call.id, ok: true, value: call.id }),
    })
    expect(run.done.value).toEqual(['tools.add: the arguments cannot be sent to the host (not structured-cloneable)', 2])
  })

  it('installs each namespace as a frozen, null-prototype object of named, read-only functions', async () => {
    const program = [
      "const d = Object.getOwnPropertyDescriptor(tools, 'add')",
      "const g = Object.getOwnPropertyDescriptor(globalThis, 'tools')",
      'return [Object.keys(tools), Object.getPrototypeOf(tools) === null, Object.isFrozen(tools), tools.named.name, [d.writable, d.enumerable, d.configurable], [g.writable, g.enumerable, g.configurable], typeof other]',
    ].join('\n')
    const run = await boot(program, { namespaces: [...namespaces, { global: 'other', names: [] }] })
    expect(run.done.value).toEqual([['add', 'fail', 'named'], true, true, 'named', [false, true, false], [true, false, true], 'object'])
  })
})

describe('bootstrap: the start message and the handle', () => {
  it('runs only the first start', async () => {
    const run = await boot('return 1', { afterStart: (_handle, post) => post({ type: 'start', program: 'return 2', namespaces: [], maxLogBytes: 10, maxValueBytes: 10 }) })
    expect(run.posted.filter((m) => m.type === 'done')).toEqual([{ type: 'done', value: 1 }])
  })

  it('ignores messages that are not objects, and a start missing its fields runs an empty program without limits', async () => {
    const run = await boot('', {
      start: { type: 'start', program: 42, namespaces: 'x', maxLogBytes: '1', maxValueBytes: null },
      afterStart: () => {},
    })
    expect(run.done).toEqual({ type: 'done' })
    const noLimits = await boot('', { start: { type: 'start', program: "console.log('y'.repeat(100)); return 'z'.repeat(100)", namespaces: null } })
    expect(noLimits.done).toEqual({ type: 'done', value: 'z'.repeat(100) })
    expect(texts(noLimits)).toEqual(['y'.repeat(100)])
  })

  it('ignores null and primitive messages before the start', async () => {
    const { port1, port2 } = new MessageChannel()
    const posted: unknown[] = []
    port2.addEventListener('message', (e: MessageEvent) => posted.push(e.data))
    port2.start()
    const { startBootstrap } = await import('../../../src/code-runtime/in-sandbox/bootstrap.js')
    startBootstrap(port1 as unknown as WireEndpoint)
    port2.postMessage(null)
    port2.postMessage('start')
    port2.postMessage({ type: 'reply', id: 1, ok: true })
    // `ready` arrives (awaited, not assumed within a fixed time), then a turn for anything else.
    await until(() => posted.length > 0, 'the ready message', 10_000)
    await new Promise((resolve) => setTimeout(resolve, 20))
    port1.close()
    port2.close()
    expect(posted).toEqual([{ type: 'ready' }])
  })

  it('reportUncaught ends a started run with that error, once; before the start it does nothing', async () => {
    const run = await boot('await new Promise(() => {})', {
      afterStart: (handle) => {
        setTimeout(() => {
          handle.reportUncaught(new Error('from a timer'))
          handle.reportUncaught(new Error('second'))
        }, 5)
      },
    })
    expect(run.posted.filter((m) => m.type === 'done')).toHaveLength(1)
    expect(run.done.error).toMatchObject({ name: 'Error', message: 'from a timer' })

    const { port1, port2 } = new MessageChannel()
    const posted: unknown[] = []
    port2.addEventListener('message', (e: MessageEvent) => posted.push(e.data))
    port2.start()
    const { startBootstrap } = await import('../../../src/code-runtime/in-sandbox/bootstrap.js')
    startBootstrap(port1 as unknown as WireEndpoint).reportUncaught(new Error('too early'))
    await until(() => posted.length > 0, 'the ready message', 10_000)
    await new Promise((resolve) => setTimeout(resolve, 20))
    port1.close()
    port2.close()
    expect(posted).toEqual([{ type: 'ready' }])
  })

  it('starts its endpoint', async () => {
    let started = 0
    await boot('return 1', { wrap: (port) => ({ ...bind(port), start: () => { started++; port.start?.() } }) })
    expect(started).toBe(1)
  })

  it('when posting the outcome throws, posts a done naming why instead', async () => {
    let failed = false
    const run = await boot('return 1', {
      wrap: (port) => ({
        ...bind(port),
        postMessage(message: unknown) {
          if ((message as { type?: string }).type === 'done' && !failed) {
            failed = true
            throw new Error('channel broke')
          }
          port.postMessage(message)
        },
      }),
    })
    expect(run.done).toEqual({ type: 'done', error: { name: 'Error', message: "the run's outcome could not be reported (channel broke)" } })
    const unnamed = await boot('return 1', {
      wrap: (port) => {
        let once = false
        return {
          ...bind(port),
          postMessage(message: unknown) {
            if ((message as { type?: string }).type === 'done' && !once) {
              once = true
              throw 7
            }
            port.postMessage(message)
          },
        }
      },
    })
    expect(unnamed.done.error).toEqual({ name: 'Error', message: "the run's outcome could not be reported (unknown error)" })
  })
})

describe('bootstrap: flush before done', () => {
  it('posts done only after the platform flush settles', async () => {
    let release: () => void = () => {}
    const flushed = new Promise<void>((resolve) => {
      release = resolve
    })
    let released = false
    let doneBeforeRelease: boolean | undefined
    const pending = boot('return 1', {
      flush: () => {
        // Released a turn later, well within the 250 ms the bootstrap waits at most.
        setTimeout(() => {
          released = true
          release()
        }, 0)
        return flushed
      },
      wrap: (port) => ({
        ...bind(port),
        postMessage(message: unknown) {
          if ((message as { type?: string }).type === 'done') doneBeforeRelease = !released
          port.postMessage(message)
        },
      }),
    })
    expect((await pending).done).toEqual({ type: 'done', value: 1 })
    expect(doneBeforeRelease).toBe(false)
  })

  it('a flush that rejects still lets done through', async () => {
    expect((await boot('return 2', { flush: () => Promise.reject(new Error('x')) })).done).toEqual({ type: 'done', value: 2 })
  })

  it('a flush that never settles holds done for about 250 ms, no longer', async () => {
    const started = performance.now()
    const run = await boot('return 3', { flush: () => new Promise<void>(() => {}) })
    const elapsed = performance.now() - started
    expect(run.done).toEqual({ type: 'done', value: 3 })
    expect(elapsed).toBeGreaterThanOrEqual(240)
    expect(elapsed).toBeLessThan(2_000)
  }, 5_000)
})

describe('strictJson', () => {
  it('lets JSON values through unchanged and refuses what JSON would change', () => {
    const holder = {}
    for (const ok of [null, 0, -1.5, 'x', true, false, [1], { a: 1 }]) expect(strictJson.call(holder, 'k', ok)).toBe(ok)
    expect(() => strictJson.call(holder, 'k', () => 1)).toThrow(new TypeError('a function is not JSON'))
    expect(() => strictJson.call(holder, 'k', Symbol.iterator)).toThrow(new TypeError('a symbol is not JSON'))
    expect(() => strictJson.call(holder, 'k', Number.NaN)).toThrow(new TypeError('NaN is not JSON'))
    expect(() => strictJson.call(holder, 'k', Number.POSITIVE_INFINITY)).toThrow(new TypeError('Infinity is not JSON'))
    for (const binary of [new Map(), new Set(), /r/, new ArrayBuffer(1), new DataView(new ArrayBuffer(1)), new Float64Array(1)]) {
      expect(() => strictJson.call(holder, 'k', binary)).toThrow(new TypeError('a Map, Set, RegExp or binary value is not JSON'))
    }
  })
})

/** A plain endpoint forwarding to `port`, so a test can override one method. */
function bind(port: WireEndpoint): WireEndpoint {
  return {
    postMessage: (message) => port.postMessage(message),
    addEventListener: (type, listener) => port.addEventListener(type, listener),
    removeEventListener: (type, listener) => port.removeEventListener(type, listener),
    start: () => port.start?.(),
  }
}
