/** Bun: see runtime-suite.ts and bun.runner.ts. */
import { describeRuntimeRun } from './runtime-suite.js'

describeRuntimeRun('bun', 110)
