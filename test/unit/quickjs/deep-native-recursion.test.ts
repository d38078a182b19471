/**
 * Deep native recursion over data in inline QuickJS (`createQuickJsRuntime`: the VM runs on
 * this thread's stack) and, for comparison, in a QuickJS sandbox thread (`createSandboxRuntime`,
 * whose thread has a 4 MiB stack). See deep-native-recursion-suite.ts; the workerd project runs
 * the inline half too (test/edge/workerd/quickjs.deep-recursion.test.ts).
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { describeDeepNativeRecursion } from './deep-native-recursion-suite.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

describeDeepNativeRecursion('inline QuickJS (createQuickJsRuntime)', () => createQuickJsRuntime({ wasmModule, memoryMb: 128, computeMs: 20_000 }))
describeDeepNativeRecursion('QuickJS sandbox thread (createSandboxRuntime)', () => createSandboxRuntime({ memoryMb: 128, computeMs: 20_000 }))
