/**
 * Misuse of the public library API, as a newcomer tried it: every mistake must fail fast
 * with a stable code (docs/errors.md) and a message that names the problem.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { timeoutPolicy } from '../../../src/timeout-policy.js'

const numberOutput = { schema: { type: 'number' }, render: (_a: unknown, v: number) => [{ type: 'text' as const, text: String(v) }] } as const
const base = { name: 'x', description: 'd', parameters: {}, output: numberOutput, execute: () => 1 }

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    return (error as ToolError).code
  }
  return undefined
}

function messageOf(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    return (error as Error).message
  }
  return ''
}

describe('createToolRuntime: options that throw or change when read', () => {
  it('turns a throwing getter into INVALID_OPTIONS (not the getter’s own error)', () => {
    const options = {
      get mode(): 'native' {
        throw new Error('boom')
      },
    }
    expect(codeOf(() => createToolRuntime(options))).toBe('INVALID_OPTIONS')
    expect(messageOf(() => createToolRuntime(options))).toMatch(/options\.mode .*getter/)
  })

  it('refuses an accessor option even when it would read fine', () => {
    let reads = 0
    const options = {
      get maxParallelSubCalls() {
        reads++
        return reads === 1 ? 4 : -1
      },
    }
    expect(codeOf(() => createToolRuntime(options))).toBe('INVALID_OPTIONS')
    expect(reads).toBe(0)
  })

  it('turns a Proxy whose ownKeys trap throws into INVALID_OPTIONS', () => {
    const options = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('trap')
        },
      },
    )
    expect(codeOf(() => createToolRuntime(options))).toBe('INVALID_OPTIONS')
  })

  it('turns a code runtime that throws when inspected into INVALID_OPTIONS', () => {
    const codeRuntime = {
      get language(): string {
        throw new Error('boom')
      },
    }
    expect(codeOf(() => createToolRuntime({ codeRuntime: codeRuntime as never }))).toBe('INVALID_OPTIONS')
  })

  it('still accepts a class-instance code runtime (getters on a prototype are fine there)', () => {
    class Fake {
      get language() {
        return 'typescript'
      }
      readonly isolation = 'none'
      readonly capabilities = {}
      run() {
        return Promise.resolve({ logs: [] })
      }
      dispose() {
        return Promise.resolve()
      }
    }
    expect(createToolRuntime({ codeRuntime: new Fake() as never }).options.codeRuntime).toBeInstanceOf(Fake)
  })
})

describe('defineTool: accessors and hostile objects', () => {
  it('refuses an accessor member with INVALID_DEFINITION without invoking it (docs/errors.md)', () => {
    let invoked = false
    const spec = {
      ...base,
      get execute() {
        invoked = true
        return () => 1
      },
    }
    expect(codeOf(() => defineTool(spec as never))).toBe('INVALID_DEFINITION')
    expect(messageOf(() => defineTool(spec as never))).toMatch(/execute must be a data property/)
    expect(invoked).toBe(false)
  })

  it('refuses an accessor inside output', () => {
    const output = {
      schema: { type: 'number' },
      get render() {
        return numberOutput.render
      },
    }
    expect(codeOf(() => defineTool({ ...base, output } as never))).toBe('INVALID_DEFINITION')
  })

  it('turns a Proxy trap that throws into INVALID_DEFINITION', () => {
    const spec = new Proxy(base, {
      getOwnPropertyDescriptor(target, key) {
        if (key === 'name') throw new Error('trap')
        return Reflect.getOwnPropertyDescriptor(target, key)
      },
    })
    expect(codeOf(() => defineTool(spec as never))).toBe('INVALID_DEFINITION')
  })

  it('accepts a class instance with methods on its prototype', () => {
    class Adder {
      readonly name = 'add'
      readonly description = 'd'
      readonly parameters = {}
      readonly output = numberOutput
      execute() {
        return 2
      }
    }
    expect(defineTool(new Adder() as never).name).toBe('add')
  })

  it('names the bad timeoutMs value', () => {
    expect(messageOf(() => defineTool({ ...base, timeoutMs: '10' } as never))).toMatch(/timeoutMs .*got 10/)
  })
})

describe('schema messages name the construct', () => {
  it('a raw tool whose output schema uses $ref says where once, not twice', () => {
    const runtime = createToolRuntime()
    const message = messageOf(() =>
      runtime.register({
        name: 'r',
        description: 'd',
        parameters: { type: 'object' },
        output: { schema: { $ref: '#/a' } as never, render: () => [] },
        execute: () => 1,
      } as never),
    )
    expect(message).toMatch(/unsupported keyword "\$ref"/)
    expect(message.match(/at the schema root/g)).toHaveLength(1)
  })

  it('a DSL spec with $ref instead of a type names $ref', () => {
    const message = messageOf(() => defineTool({ ...base, output: { ...numberOutput, schema: { $ref: '#/x' } } } as never))
    expect(message).toMatch(/needs a "type"/)
    expect(message).toMatch(/"\$ref"/)
  })
})

describe('timeoutPolicy with a timeoutMs beyond the 32-bit timer range', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  const slowTool = (timeoutMs: number) =>
    defineTool({
      name: 'slow',
      description: 'Waits until cancelled.',
      parameters: {},
      timeoutMs,
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (_args, exec) =>
        new Promise<string>((resolve, reject) => {
          exec.signal.addEventListener('abort', () => reject(exec.signal.reason as Error), { once: true })
          setTimeout(() => resolve('done'), 20)
        }),
    })

  it('does not time out at once (Node turns a delay over 2^31-1 ms into 1 ms)', async () => {
    const runtime = createToolRuntime()
    runtime.on('tools/execute', timeoutPolicy())
    runtime.register(slowTool(2 ** 40))
    const result = await runtime.execute({ callId: 'c', name: 'slow', arguments: {}, signal: new AbortController().signal })
    expect(result.isError ? result.error.info?.code : result.value).toBe('done')
  })

  it('still fires at a deadline longer than one timer can hold', async () => {
    vi.useFakeTimers()
    const limit = 2 ** 31 - 1
    const runtime = createToolRuntime()
    runtime.on('tools/execute', timeoutPolicy())
    runtime.register(
      defineTool({
        name: 'forever',
        description: 'Runs until cancelled.',
        parameters: {},
        timeoutMs: limit * 2.5,
        output: { schema: { type: 'null' }, render: () => [] },
        execute: (_args, exec) =>
          new Promise<null>((_resolve, reject) => {
            exec.signal.addEventListener('abort', () => reject(exec.signal.reason as Error), { once: true })
          }),
      }),
    )
    let settled = false
    const pending = runtime
      .execute({ callId: 'c', name: 'forever', arguments: {}, signal: new AbortController().signal })
      .finally(() => (settled = true))
    await vi.advanceTimersByTimeAsync(limit * 2)
    expect(settled).toBe(false)
    await vi.advanceTimersByTimeAsync(limit)
    const result = await pending
    expect(result.isError && result.error.info?.code).toBe('TOOL_TIMEOUT')
  })
})
