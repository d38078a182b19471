/**
 * Deep native recursion over data in real Chromium: inline QuickJS on the page's main thread
 * (`createQuickJsRuntime`, the VM on the page's own stack). The suite of
 * test/unit/quickjs/deep-native-recursion-suite.ts. Not yet the QuickJS sandbox in Web Workers
 * (`createSandboxRuntime`): at its 96 KiB limit a 5 000-level `JSON.stringify` still exhausts a
 * Chromium worker's stack (`worker-exit`; docs/runtimes.md "Deep recursion").
 */
import { afterAll } from 'vitest'
import { createQuickJsRuntime } from '../../platforms/quickjs/index.js'
import type { CodeRuntime } from '../../src/code-runtime/contract.js'
import { describeDeepNativeRecursion } from '../unit/quickjs/deep-native-recursion-suite.js'

const runtimes: CodeRuntime[] = []
function keep<T extends CodeRuntime>(runtime: T): T {
  runtimes.push(runtime)
  return runtime
}
afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.dispose()))
})

describeDeepNativeRecursion('inline QuickJS (Chromium main thread)', () => keep(createQuickJsRuntime({ memoryMb: 128, computeMs: 20_000 })))
