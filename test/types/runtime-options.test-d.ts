/**
 * Every code runtime's options type declares each limit the shared reader
 * (`readCodeRunLimits`, src/code-runtime/limits.ts) accepts at run time: a limit the
 * factory honours but its type omits (as `maxPendingArgBytes` once was for the inline
 * QuickJS runtime and the trusted worker runtimes) is a compile error for a caller who
 * passes it as an object literal.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type { BrowserWorkerRuntimeOptions } from '../../platforms/browser/browser-worker-runtime.js'
import type { SandboxRuntimeOptions } from '../../platforms/node/index.js'
import { createNodeWorkerRuntime } from '../../platforms/node/index.js'
import type { NodeWorkerRuntimeOptions } from '../../platforms/node/index.js'
import { createQuickJsRuntime } from '../../platforms/quickjs/quickjs-runtime.js'
import type { QuickJsRuntimeOptions } from '../../platforms/quickjs/quickjs-runtime.js'
import type { CodeRunLimits } from '../../src/code-runtime/limits.js'

/** The limit names every factory reads (`CODE_RUN_LIMIT_KEYS`), as a type. */
type LimitKey = keyof CodeRunLimits

describe('code runtime options declare every shared limit', () => {
  it('each options type has every key of CodeRunLimits, as an optional number', () => {
    expectTypeOf<LimitKey>().toMatchTypeOf<keyof QuickJsRuntimeOptions>()
    expectTypeOf<LimitKey>().toMatchTypeOf<keyof NodeWorkerRuntimeOptions>()
    expectTypeOf<LimitKey>().toMatchTypeOf<keyof BrowserWorkerRuntimeOptions>()
    expectTypeOf<LimitKey>().toMatchTypeOf<keyof SandboxRuntimeOptions>()
    expectTypeOf<QuickJsRuntimeOptions['maxPendingArgBytes']>().toEqualTypeOf<number | undefined>()
    expectTypeOf<NodeWorkerRuntimeOptions['maxPendingArgBytes']>().toEqualTypeOf<number | undefined>()
    expectTypeOf<BrowserWorkerRuntimeOptions['maxPendingArgBytes']>().toEqualTypeOf<number | undefined>()
  })

  it('the factories take maxPendingArgBytes in an object literal', () => {
    expectTypeOf(createQuickJsRuntime).toBeCallableWith({ maxPendingArgBytes: 4 * 1024 * 1024 })
    expectTypeOf(createNodeWorkerRuntime).toBeCallableWith({ maxPendingArgBytes: 4 * 1024 * 1024 })
  })
})
