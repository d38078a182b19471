/**
 * Deep native recursion over data in inline QuickJS (`createQuickJsRuntime`: the VM runs on
 * this thread's stack) and, for comparison, in a QuickJS sandbox thread (`createSandboxRuntime`,
 * whose thread has a 4 MiB stack). See deep-native-recursion-suite.ts; the workerd project runs
 * the inline half too (test/edge/workerd/quickjs.deep-recursion.test.ts).
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { describeDeepNativeRecursion } from './deep-native-recursion-suite.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

const runtimes: CodeRuntime[] = []
function keep<T extends CodeRuntime>(runtime: T): T {
  runtimes.push(runtime)
  return runtime
}
afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.dispose()))
})

describeDeepNativeRecursion('inline QuickJS (createQuickJsRuntime)', () => keep(createQuickJsRuntime({ wasmModule, memoryMb: 128, computeMs: 20_000 })))
describeDeepNativeRecursion('QuickJS sandbox thread (createSandboxRuntime)', () => keep(createSandboxRuntime({ memoryMb: 128, computeMs: 20_000 })))
