import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { describeResumeTelemetry } from '../unit/telemetry/resume-suite.js'

// Two runtimes in one page over one store, each with its own Web Worker pool: the second
// stands in for another process (a page has no second process; the worker pools share nothing but the store).
describeResumeTelemetry('sandbox (QuickJS in Chromium Web Workers)', ({ parkAfterMs }) => createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs }))
