import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/sandbox-runtime.js'
import type { CodeBindingNamespace } from '../../../src/code-runtime/contract.js'
import { ToolCallError } from '../../../src/errors.js'
import { wrapProgram } from '../../../engine/python/thread-server.js'
import { formatProgramError } from '../../../src/code-runtime/host-session.js'

const runtime = createSandboxRuntime({ language: 'python', computeMs: 2_000, maxWallMs: 10_000, maxLogBytes: 4_096 })
afterAll(() => runtime.dispose())

const calls: unknown[] = []
let inFlight = 0
let peak = 0
const tools: CodeBindingNamespace = {
  global: 'tools',
  functions: {
    add: async (args) => {
      calls.push(args)
      const { x, y } = args as { x: number; y: number }
      return x + y
    },
    echo: async (args) => args,
    'odd-name': async (args) => ({ got: args }),
    wait: async () => {
      inFlight++
      peak = Math.max(peak, inFlight)
      await new Promise((resolve) => setTimeout(resolve, 100))
      inFlight--
      return 'done'
    },
    fail: async () => {
      throw new ToolCallError('fail', 'no such thing', 'NOT_FOUND')
    },
  },
}
const catalog: CodeBindingNamespace = { global: 'catalog', variadic: true, functions: { search: async (args) => args } }

const run = (program: string) => runtime.run({ program, bindings: [tools, catalog] })

describe('Python sandbox (MicroPython in worker threads)', () => {
  it('reports its language and isolation', () => {
    expect(runtime.language).toBe('python')
    expect(runtime.isolation).toBe('micropython-sandbox')
    expect(runtime.capabilities.confinesAuthority).toBe(true)
  })

  it('runs the body of an async function: return, print, tool calls, odd names', async () => {
    const result = await run('print("hello", 1)\ntotal = await tools.add({"x": 2, "y": 3})\nodd = await tools["odd-name"]({"a": [1, 2.5, None, True]})\nreturn {"total": total, "odd": odd}')
    expect(result.error).toBeUndefined()
    expect(result.value).toEqual({ total: 5, odd: { got: { a: [1, 2.5, null, true] } } })
    expect(result.logs).toEqual([{ source: 'console', level: 'log', text: 'hello 1' }])
  })

  it('overlaps calls with asyncio.gather', async () => {
    const result = await run('return await asyncio.gather(*[tools.wait() for _ in range(10)])')
    expect(result.value).toEqual(Array(10).fill('done'))
    // All ten were in flight at once: a count, not a time.
    expect(peak).toBe(10)
  })

  it('raises ToolCallError with tool_name and code for a failed call', async () => {
    const result = await run('try:\n    await tools.fail()\nexcept ToolCallError as e:\n    return [e.tool_name, e.code, str(e)]')
    expect(result.error).toBeUndefined()
    const [toolName, code, message] = result.value as string[]
    expect(toolName).toBe('fail')
    expect(code).toBe('NOT_FOUND')
    expect(message).toContain('no such thing')
  })

  it('passes every argument of a variadic namespace, keywords as a trailing dict', async () => {
    const result = await run('return await catalog.search("files", limit=3)')
    expect(result.value).toEqual(['files', { limit: 3 }])
  })

  it('keeps JSON lossless both ways: big ints and nan are refused, not rounded', async () => {
    const big = await run('return 2**60')
    expect(big.error?.kind).toBe('exception')
    expect(big.error?.message).toContain('beyond 2**53 - 1')
    const nan = await run('return float("nan")')
    expect(nan.error?.message).toContain('nan')
    calls.length = 0
    const arg = await run('await tools.add({"x": 2**60, "y": 1})')
    expect(arg.error?.message).toContain('beyond 2**53 - 1')
    expect(calls).toEqual([])
    const ok = await run('return await tools.echo({"n": 2**53 - 1, "f": 0.1, "s": "é", "l": [[[]]]})')
    expect(ok.value).toEqual({ n: 2 ** 53 - 1, f: 0.1, s: 'é', l: [[[]]] })
    const set = await run('return {1, 2}')
    expect(set.error?.message).toContain('set')
  })

  it('keeps a multi-line string verbatim and maps line numbers to the program', async () => {
    const text = await run('s = """a\nb"""\nreturn s')
    expect(text.value).toBe('a\nb')
    const failed = await run('x = 1\n\nraise ValueError("bad")')
    expect(failed.error?.message).toBe('ValueError: bad\n    File "program.py", line 3, in <module>')
  })

  it("keeps the program's own frames, innermost last, at most five, and a syntax error's line", async () => {
    const nested = await run('x = 1\n\ndef f():\n    raise ValueError("bad")\nf()\n')
    expect(nested.error?.message).toBe('ValueError: bad\n    File "program.py", line 5, in <module>\n    File "program.py", line 4, in f')
    const syntax = await run('x = 1\ny = x +\n')
    expect(syntax.error?.message).toBe('SyntaxError: invalid syntax\n    File "program.py", line 2')
    const deep = await run('def f(n):\n    return f(n + 1)\nf(0)')
    expect(deep.error?.message.split('\n')).toEqual(['RuntimeError: maximum recursion depth exceeded', ...Array(5).fill('    File "program.py", line 2, in f')])
  })

  it('formatProgramError keeps Python program frames and drops the prelude and others', () => {
    const stack = 'Traceback (most recent call last):\n  File "<prelude>", line 9, in _main\n  File "program.py", line 2, in <module>\n  File "other.py", line 1\nValueError: v'
    expect(formatProgramError({ name: 'ValueError', message: 'v', stack })).toBe('ValueError: v\n    File "program.py", line 2, in <module>')
    expect(formatProgramError({ name: 'ValueError', message: 'v', stack: 'File "program.pyx", line 2' })).toBe('ValueError: v')
  })

  it('reports a syntax error as an exception', async () => {
    const result = await run('return (1')
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toContain('SyntaxError')
  })

  it('starts every run in a fresh interpreter', async () => {
    await run('global leaked\nleaked = 1')
    const result = await run('return "leaked" in globals()')
    expect(result.value).toBe(false)
  })
})

describe('Python sandbox: hostile programs', () => {
  it.each(['js', 'jsffi', 'sys', 'os', 'io', 'builtins', 'micropython', 'uctypes', 'gc', 'vfs', '_tyhost', 'asyncio.core'])('refuses import %s', async (name) => {
    const result = await run(`import ${name}`)
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toContain('ImportError')
  })

  it('refuses __import__, open and input', async () => {
    for (const program of ['__import__("js")', 'open("/etc/passwd")', 'input()']) {
      const result = await run(program)
      expect(result.error?.kind, program).toBe('exception')
    }
  })

  it('reaches no module beyond the allowlist through the ones it may import', async () => {
    // Walks every module reachable from the allowed ones and from the program's globals.
    const result = await run(`
import asyncio, json, math, re, random, time, collections, functools, itertools, heapq, string, struct, binascii, base64, hashlib, hmac, copy, datetime, operator, abc, fnmatch, array, errno
seen = {}
todo = [asyncio, json, math, re, random, time, collections, functools, itertools, heapq, string, struct, binascii, base64, hashlib, hmac, copy, datetime, operator, abc, fnmatch, array, errno]
modtype = type(json)
while todo:
    m = todo.pop()
    name = getattr(m, '__name__', '?')
    if name in seen:
        continue
    seen[name] = True
    for k in dir(m):
        try:
            v = getattr(m, k)
        except Exception:
            continue
        if type(v) is modtype:
            todo.append(v)
return sorted(seen)`)
    expect(result.error).toBeUndefined()
    const reached = result.value as string[]
    // `js` stays inside asyncio.core: it is the thread's safe stand-in for globalThis (next test).
    for (const forbidden of ['sys', 'builtins', 'jsffi', 'os', 'io', 'micropython', 'uctypes', '_tyhost']) expect(reached).not.toContain(forbidden)
  })

  it('exposes no private globals through the functions it can reach', async () => {
    const result = await run('names = set()\nfor f in (tools.add, print, __import__, open, ToolCallError.__init__):\n    g = getattr(f, "__globals__", {})\n    names.update(g.keys())\nreturn sorted(names)')
    expect(result.error).toBeUndefined()
    const names = result.value as string[]
    for (const forbidden of ['sys', 'builtins', 'io', '_tyhost']) expect(names).not.toContain(forbidden)
  })

  it('gets no host object through the js proxies asyncio holds', async () => {
    const result = await run(`
import asyncio
js = asyncio.core.js
out = []
for probe in ('process', 'require', 'globalThis', 'Function', 'eval', 'Module', 'proxy_js_ref'):
    out.append(repr(getattr(js, probe, None)))
out.append(repr(js.setTimeout.constructor))
out.append(repr(getattr(js.setTimeout, '__proto__', None) and js.setTimeout.__proto__.constructor))
out.append(repr(asyncio.core.jsffi))
return out`)
    expect(result.error).toBeUndefined()
    for (const text of result.value as string[]) expect(text).toMatch(/^(None|<undefined>|undefined)$/)
  })

  it('stops a hot loop at its compute budget, and the next run works', async () => {
    const result = await run('while True:\n    pass')
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toContain('compute budget')
    expect((await run('return 1')).value).toBe(1)
  })

  it('aborts a hot loop at once', async () => {
    const controller = new AbortController()
    const pending = runtime.run({ program: 'while True:\n    pass', bindings: [], signal: controller.signal })
    setTimeout(() => controller.abort(), 50)
    const result = await pending
    expect(result.error?.kind).toBe('abort')
  })

  it('ends deep recursion and a memory bomb as exceptions', async () => {
    const deep = await run('def f(n):\n    return f(n + 1)\nf(0)')
    expect(deep.error?.message).toContain('recursion')
    const bomb = await run('x = "a" * (512 * 1024 * 1024)')
    expect(bomb.error?.message).toContain('MemoryError')
    const grow = await run('x = []\nwhile True:\n    x.append("a" * 100000)')
    // Either the heap cap or the compute budget (the collector scans a full heap on every allocation) ends it.
    expect(grow.error?.message).toMatch(/MemoryError|memory|compute budget/)
  })

  it('caps output', async () => {
    const result = await run('for i in range(10000):\n    print("x" * 100)\nreturn 1')
    expect(result.value).toBe(1)
    const bytes = result.logs.reduce((sum, entry) => sum + entry.text.length, 0)
    expect(bytes).toBeLessThan(8_192)
  })
})

describe('wrapProgram', () => {
  it('indents code but not the text of strings', () => {
    expect(wrapProgram('x = """a\nb"""\nreturn x')).toBe('async def __program__():\n    x = """a\nb"""\n    return x\n    pass\n')
    expect(wrapProgram("# it's\ny = 'q\\'\n'")).toBe("async def __program__():\n    # it's\n    y = 'q\\'\n    '\n    pass\n")
  })
})
