/** Durable-resume telemetry for inline QuickJS inside workerd (the `workerd` vitest project). */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { describeResumeTelemetry } from '../../unit/telemetry/resume-suite.js'

// Two runtimes in one isolate over one store, each with its own QuickJS instance: the second
// resumes from the stored record alone. A restarted Durable Object: test/edge/telemetry-resume.test.ts.
describeResumeTelemetry('quickjs wasm inline (workerd)', ({ parkAfterMs }) => createQuickJsRuntime({ wasmModule, memoryMb: 32, parkAfterMs }))
