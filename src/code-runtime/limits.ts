/**
 * The budgets and caps every message-passing code runtime enforces, with the RFC's
 * defaults and one validator, so each platform's factory validates the same way.
 *
 * @module
 */
import { ToolError } from '../errors.js'

/** Budgets and caps of one run. */
export interface CodeRunLimits {
  /** Measured busy time a run may use, in ms. */
  readonly computeMs: number
  /** Wall-clock ceiling of a run, in ms; never pauses. */
  readonly maxWallMs: number
  /** UTF-8 bytes of log text kept per run (each line counts one extra byte). */
  readonly maxLogBytes: number
  /** Serialized bytes of the returned value kept per run. */
  readonly maxValueBytes: number
  /**
   * Bytes of binding-call arguments a run may hold on the host at once (calls queued or running,
   * released as each settles); a call past it is refused inside the program.
   */
  readonly maxPendingArgBytes?: number
}

/** The default of {@link CodeRunLimits.maxPendingArgBytes}: 32 MiB. */
export const DEFAULT_MAX_PENDING_ARG_BYTES = 32 * 1024 * 1024

/**
 * What one JSON value of a checked call's arguments weighs against
 * {@link CodeRunLimits.maxPendingArgBytes} beyond its text: roughly what a parsed
 * object, array or number costs the host's heap, so that 3 characters of `{},` are not
 * charged 3 bytes.
 */
export const ARG_BYTES_PER_NODE = 64

/**
 * The most JSON values (objects, arrays, strings, numbers, literals; object keys count one each)
 * one binding call's arguments may hold.
 */
export const MAX_CALL_ARG_NODES = 100_000

/**
 * Reads and validates `maxPendingArgBytes` (1 KiB to 1 GiB; default
 * {@link DEFAULT_MAX_PENDING_ARG_BYTES}) from an already-checked options record.
 */
export function readMaxPendingArgBytes(options: Readonly<Record<string, unknown>>, factory: string): number {
  return integerOption(options, 'maxPendingArgBytes', DEFAULT_MAX_PENDING_ARG_BYTES, 1024, 1 << 30, factory)
}

/** The RFC's defaults. */
export const DEFAULT_CODE_RUN_LIMITS: CodeRunLimits = Object.freeze({
  computeMs: 60_000,
  maxWallMs: 600_000,
  maxLogBytes: 65_536,
  maxValueBytes: 32_768,
})

/** The longest delay timers accept (2^31 - 1 ms). */
export const MAX_TIMER_MS = 2_147_483_647

/**
 * Reads one positive integer option: absent → `fallback`; anything but an integer in
 * `[min, max]` → `ToolError('INVALID_OPTIONS')` naming the option.
 */
export function integerOption(options: Readonly<Record<string, unknown>>, key: string, fallback: number, min: number, max: number, factory: string): number {
  const value = options[key]
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ToolError('INVALID_OPTIONS', `${factory}: options.${key} must be an integer from ${min} to ${max} (got ${describe(value)})`)
  }
  return value
}

function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  return value === null ? 'null' : typeof value
}

/**
 * Validates an options object: it must be a plain object (or absent) whose keys are
 * all in `known` (so typos fail loudly). Returns it as a record.
 */
export function checkOptionsObject(options: unknown, known: readonly string[], factory: string): Readonly<Record<string, unknown>> {
  if (options === undefined) return {}
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ToolError('INVALID_OPTIONS', `${factory}: options must be an object (got ${describe(options)})`)
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new ToolError('INVALID_OPTIONS', `${factory}: unknown option ${JSON.stringify(key)} (known: ${known.join(', ')})`)
    }
  }
  return options as Readonly<Record<string, unknown>>
}

/** The limit option names {@link readCodeRunLimits} reads. */
export const CODE_RUN_LIMIT_KEYS: readonly string[] = ['computeMs', 'maxWallMs', 'maxLogBytes', 'maxValueBytes', 'maxPendingArgBytes']

/** Reads and validates the limits from an already-checked options record. */
export function readCodeRunLimits(options: Readonly<Record<string, unknown>>, factory: string): CodeRunLimits {
  return Object.freeze({
    computeMs: integerOption(options, 'computeMs', DEFAULT_CODE_RUN_LIMITS.computeMs, 1, MAX_TIMER_MS, factory),
    maxWallMs: integerOption(options, 'maxWallMs', DEFAULT_CODE_RUN_LIMITS.maxWallMs, 1, MAX_TIMER_MS, factory),
    maxLogBytes: integerOption(options, 'maxLogBytes', DEFAULT_CODE_RUN_LIMITS.maxLogBytes, 1, 1 << 30, factory),
    maxValueBytes: integerOption(options, 'maxValueBytes', DEFAULT_CODE_RUN_LIMITS.maxValueBytes, 1, 1 << 30, factory),
    maxPendingArgBytes: readMaxPendingArgBytes(options, factory),
  })
}
