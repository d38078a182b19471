/** Durable-resume telemetry for inline QuickJS inside workerd (the `workerd` vitest project). */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { describeResumeTelemetry } from '../../unit/telemetry/resume-suite.js'

// Two runtimes in one isolate over one store, each with its own QuickJS instance: the second
// resumes from the stored record alone. Not a restarted Durable Object (its run object has no tracer yet).
describeResumeTelemetry('quickjs wasm inline (workerd)', ({ parkAfterMs }) => createQuickJsRuntime({ wasmModule, memoryMb: 32, parkAfterMs }))
