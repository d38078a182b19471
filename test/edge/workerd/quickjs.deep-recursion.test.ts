/**
 * Deep native recursion over data in inline QuickJS inside workerd (the `workerd` vitest
 * project): the same suite as the node project's test/unit/quickjs/deep-native-recursion.test.ts.
 */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { describeDeepNativeRecursion } from '../../unit/quickjs/deep-native-recursion-suite.js'

describeDeepNativeRecursion('inline QuickJS (workerd)', () => createQuickJsRuntime({ wasmModule, memoryMb: 128, computeMs: 20_000 }))
