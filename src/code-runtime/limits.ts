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
export const CODE_RUN_LIMIT_KEYS: readonly string[] = ['computeMs', 'maxWallMs', 'maxLogBytes', 'maxValueBytes']

/** Reads and validates the four limits from an already-checked options record. */
export function readCodeRunLimits(options: Readonly<Record<string, unknown>>, factory: string): CodeRunLimits {
  return Object.freeze({
    computeMs: integerOption(options, 'computeMs', DEFAULT_CODE_RUN_LIMITS.computeMs, 1, MAX_TIMER_MS, factory),
    maxWallMs: integerOption(options, 'maxWallMs', DEFAULT_CODE_RUN_LIMITS.maxWallMs, 1, MAX_TIMER_MS, factory),
    maxLogBytes: integerOption(options, 'maxLogBytes', DEFAULT_CODE_RUN_LIMITS.maxLogBytes, 1, 1 << 30, factory),
    maxValueBytes: integerOption(options, 'maxValueBytes', DEFAULT_CODE_RUN_LIMITS.maxValueBytes, 1, 1 << 30, factory),
  })
}
