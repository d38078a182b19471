/**
 * The in-VM side of the QuickJS runtime (src/code-runtime/in-sandbox/quickjs-entry.ts) run
 * in this thread: QuickJS evaluates a generated bundle of this module
 * (engine/quickjs/_sandbox-source.ts), so the source itself is only exercised here. The
 * test plays the engine: `post` collects the JSON texts the VM sends, `timer` records the
 * host timers it asks for (and may refuse), and `deliver` / `fire` drive it.
 *
 * `install` writes timers, the sandbox globals and (at `start`) `console`, `ToolCallError`
 * and the binding namespaces to this realm's `globalThis`: each is put back before the
 * test's next await on a real timer.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { install } from '../../../src/code-runtime/in-sandbox/quickjs-entry.js'
import { SANDBOX_GLOBAL_NAMES } from '../../../src/code-runtime/in-sandbox/sandbox-globals.js'
import { MAX_VM_MESSAGE_CHARS } from '../../../src/code-runtime/sandbox-protocol.js'
import type { WireNamespace } from '../../../src/code-runtime/wire.js'
import { fakeHost } from './sandbox-globals-harness.js'
import { compilersAreNative, saveCompilers } from './compile-guard-harness.js'

const TIMER_NAMES = ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'queueMicrotask'] as const
const RUN_NAMES = ['console', 'ToolCallError'] as const
const realImmediate = setImmediate

type Saved = ReadonlyArray<readonly [object, PropertyKey, PropertyDescriptor | undefined]>
const save = (names: readonly string[]): Saved => names.map((name) => [globalThis, name, Object.getOwnPropertyDescriptor(globalThis, name)] as const)
const restore = (saved: Saved): void => {
  for (const [target, key, descriptor] of saved) {
    if (descriptor === undefined) Reflect.deleteProperty(target, key)
    else Object.defineProperty(target, key, descriptor)
  }
}

interface Timers {
  setTimeout(callback: unknown, delay?: unknown, ...args: unknown[]): number
  setInterval(callback: unknown, delay?: unknown, ...args: unknown[]): number
  clearTimeout(id: unknown): void
  clearInterval(id: unknown): void
  queueMicrotask(callback: unknown): void
}

/** Installs the entry with a recording engine; returns the API, what it posted and the timers it installed, this realm's globals put back. */
function entry(options: { refuse?: (id: number, delay: number) => boolean } = {}) {
  const saved: Saved = [
    ...save([...TIMER_NAMES, ...SANDBOX_GLOBAL_NAMES]),
    [globalThis, 'Date', Object.getOwnPropertyDescriptor(globalThis, 'Date')],
    [Date.prototype, 'constructor', Object.getOwnPropertyDescriptor(Date.prototype, 'constructor')],
    [Math, 'random', Object.getOwnPropertyDescriptor(Math, 'random')],
  ]
  // `install` wraps eval and the function constructors (the compile guard): put back too.
  const compilers = saveCompilers()
  const texts: string[] = []
  const hostTimers: Array<[number, number]> = []
  const descriptors: Record<string, PropertyDescriptor> = {}
  try {
    const api = install(
      (json) => void texts.push(json),
      (id, delay) => {
        hostTimers.push([id, delay])
        return options.refuse?.(id, delay) !== true
      },
      fakeHost(),
    )
    for (const name of TIMER_NAMES) descriptors[name] = Object.getOwnPropertyDescriptor(globalThis, name)!
    const timers = Object.fromEntries(TIMER_NAMES.map((name) => [name, descriptors[name]!.value])) as unknown as Timers
    return {
      api,
      texts,
      hostTimers,
      descriptors,
      timers,
      get posted() {
        return texts.map((text) => JSON.parse(text) as Record<string, unknown>)
      },
    }
  } finally {
    restore(saved)
    compilers.restore()
  }
}
type Entry = ReturnType<typeof entry>

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => realImmediate(resolve))
}

/** Delivers `start` and lets `during` drive the run; `console`, `ToolCallError` and the namespaces are put back afterwards. */
async function run(e: Entry, program: string, namespaces: readonly WireNamespace[] = [], during?: () => Promise<void> | void) {
  const saved = save([...RUN_NAMES, ...namespaces.map((n) => n.global)])
  try {
    e.api.deliver(JSON.stringify({ type: 'start', program, namespaces, maxLogBytes: 65_536, maxValueBytes: 65_536 }))
    await turns()
    await during?.()
    await turns()
  } finally {
    restore(saved)
  }
  return e.posted.find((m) => m.type === 'done')
}

// Nothing of the VM's is left on this realm: a later file sharing it (isolate: false) would
// compile through a guard whose host op is this file's fake.
afterEach(() => {
  expect(compilersAreNative()).toBe(true)
})

describe('quickjs-entry: messages', () => {
  it('posts ready at install, as JSON text, and runs a program delivered as JSON text', async () => {
    const e = entry()
    expect(e.texts).toEqual(['{"type":"ready"}'])
    expect(await run(e, 'return { a: [1, "x"] }')).toEqual({ type: 'done', value: { a: [1, 'x'] } })
  })

  it('posts what the program logs through the strict JSON replacer', async () => {
    const e = entry()
    await run(e, 'console.log("hi", 1); return 1')
    expect(e.texts[1]).toBe('{"type":"log","source":"console","level":"log","text":"hi 1"}')
  })

  it('sends a binding call with its envelope text, then delivers the reply to the program', async () => {
    const e = entry()
    const namespaces = [{ global: 'tools', names: ['echo', 'none'] }]
    const done = await run(e, 'const a = await tools.echo({ q: "é\\n" }); const b = await tools.none(); return [a, b]', namespaces, async () => {
      expect(e.texts[1]).toBe('{"type":"call","id":1,"global":"tools","name":"echo","args":{"q":"é\\n"}}')
      e.api.deliver('{"type":"reply","id":1,"ok":true,"value":"first"}')
      await turns()
      // No arguments: no args key.
      expect(e.texts[2]).toBe('{"type":"call","id":2,"global":"tools","name":"none"}')
      e.api.deliver('{"type":"reply","id":2,"ok":true,"value":2}')
    })
    expect(done).toEqual({ type: 'done', value: ['first', 2] })
  })

  it('the envelope quotes the namespace and function names as JSON', async () => {
    const e = entry()
    const namespaces = [{ global: 'ns', names: ['we"ird'] }]
    await run(e, 'void ns[\'we"ird\'](1); return 0', namespaces)
    expect(e.texts[1]).toBe('{"type":"call","id":1,"global":"ns","name":"we\\"ird","args":1}')
  })

  it(`arguments of up to ${MAX_VM_MESSAGE_CHARS / 1024 / 1024} MiB of JSON go to the host; one character more is refused in the program`, async () => {
    const e = entry()
    const namespaces = [{ global: 'tools', names: ['big'] }]
    // `,"args":` and the two quotes: the string fills the text to the limit.
    const fits = MAX_VM_MESSAGE_CHARS - 10
    const done = await run(e, `void tools.big('x'.repeat(${fits})); try { await tools.big('x'.repeat(${fits + 1})); return 'sent' } catch (error) { return error.name + ': ' + error.message }`, namespaces)
    expect(done).toEqual({ type: 'done', value: 'TypeError: tools.big: the arguments cannot be sent to the host (the arguments take 9 MiB of JSON; at most 8 MiB go to the host in one call)' })
    expect(e.texts.filter((text) => text.startsWith('{"type":"call"')).map((text) => text.length)).toEqual([`{"type":"call","id":1,"global":"tools","name":"big"}`.length + MAX_VM_MESSAGE_CHARS])
  })

  it('refuses arguments the strict JSON replacer refuses', async () => {
    const e = entry()
    const done = await run(e, 'try { await tools.f({ n: NaN }) } catch (error) { return error.message } return "sent"', [{ global: 'tools', names: ['f'] }])
    expect(done).toEqual({ type: 'done', value: 'tools.f: the arguments cannot be sent to the host (NaN is not JSON)' })
    expect(e.texts.some((text) => text.startsWith('{"type":"call"'))).toBe(false)
  })
})

describe('quickjs-entry: timers', () => {
  it('installs the timers as writable, configurable, non-enumerable globals', () => {
    const e = entry()
    for (const name of TIMER_NAMES) {
      expect(e.descriptors[name]).toMatchObject({ writable: true, configurable: true, enumerable: false })
      expect(typeof e.descriptors[name]!.value).toBe('function')
    }
  })

  it('setTimeout arms host timer ids 1, 2, … with the delay; firing runs the callback once with its arguments', () => {
    const e = entry()
    const seen: unknown[][] = []
    const first = e.timers.setTimeout((...args: unknown[]) => seen.push(args), 25, 'a', 2)
    const second = e.timers.setTimeout(() => seen.push(['second']), 0)
    expect([first, second]).toEqual([1, 2])
    expect(e.hostTimers).toEqual([
      [1, 25],
      [2, 0],
    ])
    e.api.fire(first)
    e.api.fire(first)
    expect(seen).toEqual([['a', 2]])
    // A one-shot timer asks for no re-arm.
    expect(e.hostTimers).toHaveLength(2)
  })

  it('clamps delays: not a number or not above 0 is 0, above 2^31-1 is 2^31-1', () => {
    const e = entry()
    const cb = () => undefined
    e.timers.setTimeout(cb)
    e.timers.setTimeout(cb, '50')
    e.timers.setTimeout(cb, -5)
    e.timers.setTimeout(cb, 0.5)
    e.timers.setTimeout(cb, 2_147_483_647)
    e.timers.setTimeout(cb, 2_147_483_648)
    expect(e.hostTimers.map(([, delay]) => delay)).toEqual([0, 0, 0, 0.5, 2_147_483_647, 2_147_483_647])
  })

  it('refuses a callback that is not a function', () => {
    const e = entry()
    expect(() => e.timers.setTimeout('alert(1)', 10)).toThrow(new TypeError('the timer callback must be a function (string callbacks are not supported)'))
    expect(() => e.timers.setInterval(undefined, 10)).toThrow(TypeError)
    expect(e.hostTimers).toEqual([])
  })

  it('a timer the host refuses throws a RangeError and is forgotten', () => {
    const e = entry({ refuse: (id) => id === 1 })
    let ran = false
    expect(() => e.timers.setTimeout(() => (ran = true), 5)).toThrow(new RangeError('too many pending timers'))
    e.api.fire(1)
    expect(ran).toBe(false)
    // Ids are not reused.
    expect(e.timers.setTimeout(() => undefined, 5)).toBe(2)
  })

  it('setInterval re-arms with its delay each time it fires, until cleared', () => {
    const e = entry()
    let count = 0
    const id = e.timers.setInterval(() => count++, 40)
    e.api.fire(id)
    e.api.fire(id)
    expect(count).toBe(2)
    expect(e.hostTimers).toEqual([
      [1, 40],
      [1, 40],
      [1, 40],
    ])
    e.timers.clearInterval(id)
    expect(e.hostTimers.at(-1)).toEqual([1, -1])
    e.api.fire(id)
    expect(count).toBe(2)
  })

  it('an interval whose re-arm the host refuses runs this time and never again', () => {
    let arms = 0
    const e = entry({ refuse: () => ++arms > 1 })
    let count = 0
    const id = e.timers.setInterval(() => count++, 10)
    e.api.fire(id)
    e.api.fire(id)
    expect(count).toBe(1)
  })

  it('clearTimeout cancels: the host hears -1 once, only for a pending timer id', () => {
    const e = entry()
    let ran = false
    const id = e.timers.setTimeout(() => (ran = true), 10)
    e.timers.clearTimeout(id)
    e.timers.clearTimeout(id)
    e.timers.clearTimeout(String(id))
    e.timers.clearTimeout(99)
    e.api.fire(id)
    expect(ran).toBe(false)
    expect(e.hostTimers).toEqual([
      [1, 10],
      [1, -1],
    ])
  })

  it('a fired timer is no longer pending: clearing it afterwards tells the host nothing', () => {
    const e = entry()
    const id = e.timers.setTimeout(() => undefined, 1)
    e.api.fire(id)
    e.timers.clearTimeout(id)
    expect(e.hostTimers).toEqual([[1, 1]])
  })

  it('a timer callback that throws ends a started run with that error', async () => {
    const e = entry()
    const done = await run(e, 'await new Promise(() => {})', [], () => {
      e.timers.setTimeout(() => {
        throw new RangeError('from a timer')
      })
      e.api.fire(1)
    })
    expect(done?.error).toMatchObject({ name: 'RangeError', message: 'from a timer' })
  })

  it('a timer callback that throws before a run started changes nothing', async () => {
    const e = entry()
    e.timers.setTimeout(() => {
      throw new Error('early')
    })
    expect(() => e.api.fire(1)).not.toThrow()
    expect(await run(e, 'return 5')).toEqual({ type: 'done', value: 5 })
  })

  it('queueMicrotask runs the callback after the current job, and refuses a non-function', async () => {
    const e = entry()
    const order: string[] = []
    e.timers.queueMicrotask(() => order.push('micro'))
    order.push('sync')
    expect(order).toEqual(['sync'])
    await Promise.resolve()
    expect(order).toEqual(['sync', 'micro'])
    expect(() => e.timers.queueMicrotask('x')).toThrow(new TypeError('queueMicrotask needs a function'))
  })
})

describe('quickjs-entry: the sandbox globals', () => {
  it('installs them with the engine host op', () => {
    const saved = save([...TIMER_NAMES, ...SANDBOX_GLOBAL_NAMES])
    const clock: Saved = [
      [globalThis, 'Date', Object.getOwnPropertyDescriptor(globalThis, 'Date')],
      [Date.prototype, 'constructor', Object.getOwnPropertyDescriptor(Date.prototype, 'constructor')],
      [Math, 'random', Object.getOwnPropertyDescriptor(Math, 'random')],
    ]
    const compilers = saveCompilers()
    const host = fakeHost({ now: 7 })
    try {
      install(() => undefined, () => true, host)
      expect((globalThis as unknown as { performance: { now(): number } }).performance.now()).toBe(7)
      // The compile guard too: a compile asks the engine for its compile limit.
      expect(globalThis.eval('1 + 1')).toBe(2)
    } finally {
      restore(saved)
      restore(clock)
      compilers.restore()
    }
    expect(host.ops).toEqual(expect.arrayContaining(['now', 'compile-limit']))
  })
})
