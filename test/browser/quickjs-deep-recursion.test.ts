/**
 * Deep native recursion over data in real Chromium: inline QuickJS on the page's main thread
 * (`createQuickJsRuntime`, the VM on the page's own stack). The suite of
 * test/unit/quickjs/deep-native-recursion-suite.ts. Not yet the QuickJS sandbox in Web Workers
 * (`createSandboxRuntime`): at its 96 KiB limit a 5 000-level `JSON.stringify` still exhausts a
 * Chromium worker's stack (`worker-exit`; docs/runtimes.md "Deep recursion").
 */
import { createQuickJsRuntime } from '../../platforms/quickjs/index.js'
import { describeDeepNativeRecursion } from '../unit/quickjs/deep-native-recursion-suite.js'

describeDeepNativeRecursion('inline QuickJS (Chromium main thread)', () => createQuickJsRuntime({ memoryMb: 128, computeMs: 20_000 }))
