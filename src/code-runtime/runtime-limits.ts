/**
 * The limits every sandboxed code runtime takes (threaded TypeScript, inline QuickJS, Python):
 * one option type, one set of defaults and one validator, so a name means the same everywhere.
 * @module
 */
import { CODE_RUN_LIMIT_KEYS, DEFAULT_MAX_PENDING_ARG_BYTES, integerOption, MAX_TIMER_MS, readMaxPendingArgBytes } from './limits.js'
import type { CodeRunLimits } from './limits.js'

/** The common limits of `createSandboxRuntime` (either language) and `createQuickJsRuntime`. */
export interface CodeRuntimeLimitOptions {
  /** Busy milliseconds a run may spend executing in its VM (awaiting a binding costs nothing). 1 to 2^31−1. Default 5 000. */
  readonly computeMs?: number
  /** Wall-clock ceiling of a run in ms, from the moment it starts (not while it is queued); never paused. 1 to 2^31−1. Default 60 000. */
  readonly maxWallMs?: number
  /**
   * The fixed wasm memory of each run's VM, in MiB (16 to 2 048); everything the program allocates
   * lives in it, and exhausting it ends the run with `worker-exit`. Default 64.
   */
  readonly memoryMb?: number
  /** UTF-8 bytes of console output kept per run; the last kept line ends with an in-band mark. 1 to 2^30. Default 65 536. */
  readonly maxLogBytes?: number
  /** Serialized bytes of the returned value kept; a larger value becomes a truncated text rendering. 1 to 2^30. Default 32 768. */
  readonly maxValueBytes?: number
  /**
   * Bytes of binding-call arguments a run may hold on the host at once (calls queued or
   * running; each weighs its JSON text plus 64 bytes per JSON value), released as calls
   * settle; a call past it is refused inside the program, naming `maxPendingArgBytes`, and the
   * run goes on. 1 024 to 2^30. Default 33 554 432 (32 MiB).
   */
  readonly maxPendingArgBytes?: number
}

/** The defaults of {@link CodeRuntimeLimitOptions}: what a person waits for, not the RFC's batch-job ceilings. */
export const CODE_RUNTIME_DEFAULTS = Object.freeze({
  computeMs: 5_000,
  maxWallMs: 60_000,
  memoryMb: 64,
  maxLogBytes: 65_536,
  maxValueBytes: 32_768,
  maxPendingArgBytes: DEFAULT_MAX_PENDING_ARG_BYTES,
})

/** The bounds of {@link CodeRuntimeLimitOptions.memoryMb}, in MiB. */
export const MEMORY_MB_RANGE = Object.freeze({ min: 16, max: 2048 })

/** The option names {@link readRuntimeLimits} reads. */
export const CODE_RUNTIME_LIMIT_KEYS: readonly string[] = Object.freeze([...CODE_RUN_LIMIT_KEYS, 'memoryMb'])

/** Validated {@link CodeRuntimeLimitOptions}: the run limits and the VM's memory. */
export interface ResolvedRuntimeLimits {
  /** The budgets and caps of each run (frozen). */
  readonly limits: Required<CodeRunLimits>
  /** Each run's wasm memory, in MiB. */
  readonly memoryMb: number
}

/**
 * Reads the common limits from an options record already checked for unknown keys; a bad value
 * throws `ToolError('INVALID_OPTIONS')` with the same text in every runtime (the factory's name first).
 */
export function readRuntimeLimits(record: Readonly<Record<string, unknown>>, factory: string): ResolvedRuntimeLimits {
  const d = CODE_RUNTIME_DEFAULTS
  const limits = Object.freeze({
    computeMs: integerOption(record, 'computeMs', d.computeMs, 1, MAX_TIMER_MS, factory),
    maxWallMs: integerOption(record, 'maxWallMs', d.maxWallMs, 1, MAX_TIMER_MS, factory),
    maxLogBytes: integerOption(record, 'maxLogBytes', d.maxLogBytes, 1, 1 << 30, factory),
    maxValueBytes: integerOption(record, 'maxValueBytes', d.maxValueBytes, 1, 1 << 30, factory),
    maxPendingArgBytes: readMaxPendingArgBytes(record, factory),
  })
  return { limits, memoryMb: integerOption(record, 'memoryMb', d.memoryMb, MEMORY_MB_RANGE.min, MEMORY_MB_RANGE.max, factory) }
}
