/**
 * Deep native recursion over data in inline QuickJS inside workerd (the `workerd` vitest
 * project): the same suite as the node project's test/unit/quickjs/deep-native-recursion.test.ts.
 */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { afterAll } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { describeDeepNativeRecursion } from '../../unit/quickjs/deep-native-recursion-suite.js'

const runtimes: CodeRuntime[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.dispose()))
})

describeDeepNativeRecursion('inline QuickJS (workerd)', () => {
  const runtime = createQuickJsRuntime({ wasmModule, memoryMb: 128, computeMs: 20_000 })
  runtimes.push(runtime)
  return runtime
})
