/**
 * The sandbox thread server in this thread (engine/quickjs/thread-server.ts), over an
 * in-process channel: it loads the TypeScript stripper only when a program needs it.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import type { QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { serveSandboxThread } from '../../../engine/quickjs/thread-server.js'
import { SANDBOX_SOURCE } from '../../../engine/quickjs/_sandbox-source.js'
import { stripTypeScript } from '../../../src/code-runtime/strip.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const variant = defaultVariant as unknown as QuickJSSyncVariant

describe('serveSandboxThread: the stripper', () => {
  it('is loaded on the first program that needs it, once, and never for plain programs', async () => {
    let listener: (data: unknown) => void = () => undefined
    let waiting: ((message: unknown) => boolean) | undefined
    let found: (message: unknown) => void = () => undefined
    const next = (match: (message: unknown) => boolean) =>
      new Promise<unknown>((resolve) => {
        waiting = match
        found = resolve
      })
    let loads = 0
    serveSandboxThread(
      {
        post: (message) => {
          if (waiting?.(message) === true) {
            waiting = undefined
            found(message)
          }
        },
        onMessage: (l) => {
          listener = l
        },
      },
      variant,
      () => {
        loads++
        return stripTypeScript
      },
    )
    let ready = next((m) => (m as { type?: string }).type === 'ready')
    listener({ type: 'boot', memoryMb: 32, sandboxSource: SANDBOX_SOURCE, wasmModule })
    await ready
    const run = async (id: number, program: string): Promise<string> => {
      const done = next((m) => typeof m === 'string' && m.includes('"done"'))
      listener({ type: 'run', run: id, computeMs: 5_000, start: JSON.stringify({ type: 'start', program, namespaces: [], maxLogBytes: 65_536, maxValueBytes: 65_536 }) })
      const json = (await done) as string
      ready = next((m) => (m as { type?: string }).type === 'ready')
      listener({ type: 'end', run: id })
      await ready
      return json
    }
    expect(JSON.parse(await run(1, 'return 1 + 1'))).toMatchObject({ type: 'done', value: 2 })
    expect(loads).toBe(0)
    expect(JSON.parse(await run(2, 'const n: number = 3\nreturn n'))).toMatchObject({ type: 'done', value: 3 })
    expect(loads).toBe(1)
    expect(JSON.parse(await run(3, 'const s: string = "x"\nreturn s'))).toMatchObject({ type: 'done', value: 'x' })
    expect(loads).toBe(1)
  }, 30_000)
})

describe('the Node sandbox thread bundle', () => {
  it('is CommonJS that loads no ES module: a thread never starts Node\'s ES module loader (~20-30 ms of its start, issue 34)', () => {
    const source = readFileSync(new URL('../../../platforms/node/_sandbox-thread.cjs', import.meta.url), 'utf8')
    expect(source).toMatch(/^"use strict";$/m)
    expect(source).not.toMatch(/^import[\s{*]|\bimport\(["'`]|import\.meta/m)
    expect(source).toContain('require("@jitl/quickjs-wasmfile-release-sync/emscripten-module")')
  })
})
