/** Deno: see runtime-suite.ts and deno.runner.ts. */
import { describeRuntimeRun } from './runtime-suite.js'

describeRuntimeRun('deno', 160)
