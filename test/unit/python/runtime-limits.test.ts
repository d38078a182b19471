import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/sandbox-runtime.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { CODE_RUNTIME_DEFAULTS, CODE_RUNTIME_LIMIT_KEYS, readRuntimeLimits } from '../../../src/code-runtime/runtime-limits.js'
import { SANDBOX_DEFAULT_LIMITS } from '../../../src/code-runtime/sandbox-runtime.js'
import { ToolError } from '../../../src/errors.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

/** The three code runtimes that share the limits, each with the factory name its errors start with. */
const factories: ReadonlyArray<readonly [string, string, (options: Record<string, unknown>) => { dispose(): Promise<void> | void }]> = [
  ['TypeScript sandbox', 'createSandboxRuntime', (o) => createSandboxRuntime({ prespawn: 0, ...o })],
  ['Python sandbox', 'createSandboxRuntime', (o) => createSandboxRuntime({ language: 'python', prespawn: 0, ...o })],
  ['QuickJS inline', 'createQuickJsRuntime', (o) => createQuickJsRuntime({ wasmModule, prewarm: false, ...o } as never)],
]

function refusal(make: () => unknown): string {
  try {
    make()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    expect((error as ToolError).code).toBe('INVALID_OPTIONS')
    return (error as Error).message
  }
  throw new Error('accepted')
}

const bad: ReadonlyArray<readonly [string, unknown, string]> = [
  ['computeMs', 0, 'must be an integer from 1 to 2147483647 (got 0)'],
  ['computeMs', 1.5, 'must be an integer from 1 to 2147483647 (got 1.5)'],
  ['maxWallMs', '60s', 'must be an integer from 1 to 2147483647 (got "60s")'],
  ['memoryMb', 15, 'must be an integer from 16 to 2048 (got 15)'],
  ['memoryMb', 2049, 'must be an integer from 16 to 2048 (got 2049)'],
  ['maxLogBytes', 0, `must be an integer from 1 to ${2 ** 30} (got 0)`],
  ['maxValueBytes', null, `must be an integer from 1 to ${2 ** 30} (got null)`],
  ['maxPendingArgBytes', 1023, `must be an integer from 1024 to ${2 ** 30} (got 1023)`],
]

describe('one set of code-runtime limits (issue 33 item 1, issue 38 item 5)', () => {
  it('has one default per limit: interactive budgets, the same in every runtime', () => {
    expect(CODE_RUNTIME_DEFAULTS).toEqual({ computeMs: 5_000, maxWallMs: 60_000, memoryMb: 64, maxLogBytes: 65_536, maxValueBytes: 32_768, maxPendingArgBytes: 33_554_432 })
    expect(Object.isFrozen(CODE_RUNTIME_DEFAULTS)).toBe(true)
    const { memoryMb, ...limits } = CODE_RUNTIME_DEFAULTS
    expect(readRuntimeLimits({}, 'f')).toEqual({ limits, memoryMb })
    expect(SANDBOX_DEFAULT_LIMITS).toEqual(limits)
    expect([...CODE_RUNTIME_LIMIT_KEYS].sort()).toEqual(Object.keys(CODE_RUNTIME_DEFAULTS).sort())
  })

  it('the TypeScript and Python sandboxes resolve the same limits from the same options', async () => {
    for (const options of [{}, { computeMs: 700, maxWallMs: 9_000, maxLogBytes: 100, maxValueBytes: 200, maxPendingArgBytes: 4096 }]) {
      const ts = createSandboxRuntime({ prespawn: 0, ...options })
      const py = createSandboxRuntime({ language: 'python', prespawn: 0, ...options })
      expect(py.limits).toEqual(ts.limits)
      expect(ts.limits).toEqual(readRuntimeLimits(options, 'f').limits)
      await Promise.all([ts.dispose(), py.dispose()])
    }
  })

  for (const [name, factory, make] of factories) {
    it(`${name}: accepts each bound and refuses each bad value with the shared text`, async () => {
      for (const [key, value, text] of bad) expect(refusal(() => make({ [key]: value }))).toBe(`${factory}: options.${key} ${text}`)
      const edges = [
        { computeMs: 1, maxWallMs: 1, memoryMb: 16, maxLogBytes: 1, maxValueBytes: 1, maxPendingArgBytes: 1024 },
        { computeMs: 2 ** 31 - 1, maxWallMs: 2 ** 31 - 1, memoryMb: 2048, maxLogBytes: 2 ** 30, maxValueBytes: 2 ** 30, maxPendingArgBytes: 2 ** 30 },
      ]
      for (const options of edges) await make(options).dispose()
    })
  }
})
