/**
 * Validation of {@link ToolRuntimeOptions} at construction: every field is checked and defaults
 * applied, so a misconfiguration fails where it is written with a clear `INVALID_OPTIONS` message
 * instead of at the first call.
 * @module
 */
import { ToolError } from '../errors.js'
import type { PreflightEngine, PreflightMode } from '../preflight/types.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../runtime-types.js'
import type { CodeRuntime } from '../code-runtime/contract.js'
import type { DurableStore } from '../durable/store.js'
import type { TelemetryMeter, TelemetryTracer, ToolTelemetryOptions } from '../telemetry/types.js'
import { positiveInteger } from '../util/guards.js'

/** Default `maxParallelSubCalls` (the seed's Code Mode default). */
export const DEFAULT_MAX_PARALLEL_SUB_CALLS = 10
/** Default `maxOutputBytes`: 64 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
/** Default `sdkBudgetChars`: 12,000 characters (≈ 3,000 o200k tokens). */
export const DEFAULT_SDK_BUDGET_CHARS = 12_000

const MODES = new Set(['native', 'code', 'both'])
const KNOWN = new Set(['mode', 'codeRuntime', 'codeRuntimes', 'approval', 'approvals', 'sessionLog', 'maxParallelSubCalls', 'maxOutputBytes', 'toolOrder', 'sdkBudgetChars', 'preflight', 'preflightEngine', 'store', 'telemetry', 'runs'])
/** The values of `preflight` (the runtime's option and an agent's `preflightMode`). */
export const PREFLIGHT_MODES: ReadonlySet<string> = new Set(['off', 'warn', 'block'])

function fail(message: string): never {
  throw new ToolError('INVALID_OPTIONS', message)
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

function guardRead(what: string, check: () => void): void {
  try {
    check()
  } catch (error) {
    if (error instanceof ToolError) throw error
    fail(`${what} could not be read (${error instanceof Error ? error.message : String(error)})`)
  }
}

/** `options.telemetry`: a tracer and a meter of the OpenTelemetry API's shape, read once and frozen. */
function validateTelemetry(value: unknown): ToolTelemetryOptions {
  let checked: ToolTelemetryOptions | undefined
  guardRead('options.telemetry', () => {
    if (typeof value !== 'object' || value === null) fail(`options.telemetry must be an object ({ tracer?, meter?, captureContent? }) (got ${show(value)})`)
    const { tracer, meter, captureContent, maxContentBytes } = value as Record<string, unknown>
    if (tracer !== undefined && (typeof tracer !== 'object' || tracer === null || typeof (tracer as { startSpan?: unknown }).startSpan !== 'function')) {
      fail("options.telemetry.tracer must be an OpenTelemetry Tracer (trace.getTracer('toolyard'))")
    }
    if (meter !== undefined && (typeof meter !== 'object' || meter === null || !['createHistogram', 'createCounter', 'createUpDownCounter'].every((m) => typeof (meter as Record<string, unknown>)[m] === 'function'))) {
      fail("options.telemetry.meter must be an OpenTelemetry Meter (metrics.getMeter('toolyard'))")
    }
    if (captureContent !== undefined && typeof captureContent !== 'boolean') fail(`options.telemetry.captureContent must be a boolean (got ${show(captureContent)})`)
    if (maxContentBytes !== undefined && (typeof maxContentBytes !== 'number' || !Number.isSafeInteger(maxContentBytes) || maxContentBytes < 512)) {
      fail(`options.telemetry.maxContentBytes must be an integer of at least 512 (got ${show(maxContentBytes)})`)
    }
    checked = Object.freeze({
      ...(tracer === undefined ? {} : { tracer: tracer as TelemetryTracer }),
      ...(meter === undefined ? {} : { meter: meter as TelemetryMeter }),
      ...(captureContent === undefined ? {} : { captureContent }),
      ...(maxContentBytes === undefined ? {} : { maxContentBytes }),
    })
  })
  return checked!
}

function positiveIntegerOption(value: unknown, name: string, fallback: number): number {
  return positiveInteger(`options.${name}`, value, fallback, (message) => fail(`${message} (got ${show(value)})`))
}

/**
 * Copies the own options into a plain record, so each is read exactly once and no getter or Proxy
 * trap runs later.
 */
function readOwnOptions(options: object): Record<string, unknown> {
  const copy: Record<string, unknown> = Object.create(null) as Record<string, unknown>
  let keys: string[]
  try {
    keys = Object.keys(options)
  } catch (error) {
    fail(`createToolRuntime options could not be read (${error instanceof Error ? error.message : String(error)})`)
  }
  for (const key of keys) {
    if (!KNOWN.has(key)) fail(`unknown option ${JSON.stringify(key)} (known: ${[...KNOWN].join(', ')})`)
    let descriptor: PropertyDescriptor | undefined
    try {
      descriptor = Object.getOwnPropertyDescriptor(options, key)
    } catch (error) {
      fail(`options.${key} could not be read (${error instanceof Error ? error.message : String(error)})`)
    }
    if (descriptor === undefined) continue
    if (!('value' in descriptor)) fail(`options.${key} must be a data property, not a getter/setter`)
    copy[key] = descriptor.value as unknown
  }
  return copy
}

/** Checks `options` and returns the frozen options in force (defaults applied). */
export function validateRuntimeOptions(options: unknown): ToolRuntime['options'] {
  if (options === undefined) options = {}
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    fail(`createToolRuntime options must be an object (got ${show(options)})`)
  }
  const o = readOwnOptions(options)

  const mode = o.mode ?? 'native'
  if (typeof mode !== 'string' || !MODES.has(mode)) {
    fail(`options.mode must be 'native', 'code' or 'both' (got ${show(mode)})`)
  }

  const codeRuntime = o.codeRuntime
  if (codeRuntime !== undefined) checkCodeRuntime(codeRuntime, 'options.codeRuntime')
  const codeRuntimes = o.codeRuntimes
  if (codeRuntimes !== undefined) {
    if (!Array.isArray(codeRuntimes)) fail(`options.codeRuntimes must be an array of CodeRuntime objects (got ${show(codeRuntimes)})`)
    if (codeRuntime === undefined) fail('options.codeRuntimes needs options.codeRuntime: the one whose language a model is shown')
    const languages = [(codeRuntime as CodeRuntime).language]
    codeRuntimes.forEach((other: unknown, i: number) => {
      checkCodeRuntime(other, `options.codeRuntimes[${i}]`)
      const language = (other as CodeRuntime).language
      if (languages.includes(language)) fail(`options.codeRuntimes[${i}] runs ${JSON.stringify(language)}, a language another code runtime already runs: one code runtime a language`)
      languages.push(language)
    })
  }
  // Refused here, not at the first assemble(): such a runtime offers run_code, and every program fails.
  if (codeRuntime === undefined && mode !== 'native') {
    fail(`options.mode '${mode}' presents run_code and needs options.codeRuntime (e.g. createSandboxRuntime() from 'toolyard/node'); without one, use mode 'native' (runtime.preflight() needs no code runtime)`)
  }

  if (o.approval !== undefined && typeof o.approval !== 'function') {
    fail(`options.approval must be a function (got ${show(o.approval)})`)
  }

  if (o.approvals !== undefined && (typeof o.approvals !== 'object' || o.approvals === null || Array.isArray(o.approvals))) {
    fail(`options.approvals must be an object of broker options (got ${show(o.approvals)})`)
  }

  const sessionLog = o.sessionLog
  if (sessionLog !== undefined) {
    guardRead('options.sessionLog', () => {
      if (typeof sessionLog !== 'object' || sessionLog === null || typeof (sessionLog as { append?: unknown }).append !== 'function') {
        fail('options.sessionLog must be an object with an append(event) method')
      }
    })
  }

  const maxParallelSubCalls = positiveIntegerOption(o.maxParallelSubCalls, 'maxParallelSubCalls', DEFAULT_MAX_PARALLEL_SUB_CALLS)
  const maxOutputBytes = positiveIntegerOption(o.maxOutputBytes, 'maxOutputBytes', DEFAULT_MAX_OUTPUT_BYTES)
  // Infinity is the explicit "no budget": the full SDK whatever its size.
  const sdkBudgetChars = o.sdkBudgetChars === undefined ? DEFAULT_SDK_BUDGET_CHARS : o.sdkBudgetChars
  if (sdkBudgetChars !== Number.POSITIVE_INFINITY && (typeof sdkBudgetChars !== 'number' || !Number.isSafeInteger(sdkBudgetChars) || sdkBudgetChars < 1)) {
    fail(`options.sdkBudgetChars must be a positive integer or Infinity (got ${show(sdkBudgetChars)})`)
  }

  const preflight = o.preflight ?? 'warn'
  if (typeof preflight !== 'string' || !PREFLIGHT_MODES.has(preflight)) fail(`options.preflight must be 'off', 'warn' or 'block' (got ${show(preflight)})`)
  const preflightEngine = o.preflightEngine
  if (preflightEngine !== undefined) {
    guardRead('options.preflightEngine', () => {
      const given = preflightEngine as Record<string, unknown> | null
      if (typeof given !== 'object' || given === null || typeof given.analyze !== 'function' || typeof given.dispose !== 'function') {
        fail('options.preflightEngine must be a PreflightEngine (an object with analyze() and dispose())')
      }
    })
  }

  const store = o.store
  if (store !== undefined) {
    guardRead('options.store', () => {
      const given = store as Record<string, unknown> | null
      if (typeof given !== 'object' || given === null || !['get', 'put', 'delete', 'list'].every((m) => typeof given[m] === 'function')) {
        fail('options.store must be a DurableStore (an object with get, put, delete and list: createMemoryStore(), createFileStore(dir))')
      }
    })
  }

  const telemetry = o.telemetry === undefined ? undefined : validateTelemetry(o.telemetry)

  let toolOrder: readonly string[] | undefined
  if (o.toolOrder !== undefined) {
    if (!Array.isArray(o.toolOrder)) fail(`options.toolOrder must be an array of tool names (got ${show(o.toolOrder)})`)
    const seen = new Set<string>()
    const names: string[] = []
    for (let i = 0; i < o.toolOrder.length; i++) {
      if (!Object.hasOwn(o.toolOrder, i)) fail(`options.toolOrder[${i}] is missing (sparse array)`)
      const name: unknown = o.toolOrder[i]
      if (typeof name !== 'string' || name === '') fail(`options.toolOrder[${i}] must be a non-empty string (got ${show(name)})`)
      if (seen.has(name)) fail(`options.toolOrder names ${JSON.stringify(name)} twice`)
      seen.add(name)
      names.push(name)
    }
    toolOrder = Object.freeze(names)
  }

  const result: ToolRuntimeOptions & { mode: ToolRuntimeOptions['mode'] & string; maxParallelSubCalls: number; maxOutputBytes: number; sdkBudgetChars: number; preflight: PreflightMode } = {
    mode: mode as 'native' | 'code' | 'both',
    preflight: preflight as PreflightMode,
    ...(preflightEngine !== undefined ? { preflightEngine: preflightEngine as PreflightEngine } : {}),
    ...(store !== undefined ? { store: store as DurableStore } : {}),
    ...(telemetry !== undefined ? { telemetry } : {}),
    maxParallelSubCalls,
    maxOutputBytes,
    sdkBudgetChars,
    ...(codeRuntime !== undefined ? { codeRuntime: codeRuntime as NonNullable<ToolRuntimeOptions['codeRuntime']> } : {}),
    ...(Array.isArray(codeRuntimes) && codeRuntimes.length > 0 ? { codeRuntimes: Object.freeze([...codeRuntimes]) as ToolRuntimeOptions['codeRuntimes'] } : {}),
    ...(o.approval !== undefined ? { approval: o.approval as NonNullable<ToolRuntimeOptions['approval']> } : {}),
    ...(o.approvals !== undefined ? { approvals: o.approvals as NonNullable<ToolRuntimeOptions['approvals']> } : {}),
    ...(o.runs !== undefined ? { runs: o.runs as NonNullable<ToolRuntimeOptions['runs']> } : {}),
    ...(sessionLog !== undefined ? { sessionLog: sessionLog as NonNullable<ToolRuntimeOptions['sessionLog']> } : {}),
    ...(toolOrder !== undefined ? { toolOrder } : {}),
  }
  return Object.freeze(result) as ToolRuntime['options']
}

/** Fails unless `given` has the shape of a {@link CodeRuntime} (a getter that throws is a configuration error too). */
function checkCodeRuntime(given: unknown, path: string): void {
  if (typeof given !== 'object' || given === null) fail(`${path} must be a CodeRuntime object (got ${show(given)})`)
  const runtime = given as Record<string, unknown>
  guardRead(path, () => {
    if (typeof runtime.language !== 'string' || runtime.language === '') fail(`${path}.language must be a non-empty string`)
    if (typeof runtime.isolation !== 'string') fail(`${path}.isolation must be a string`)
    if (typeof runtime.run !== 'function') fail(`${path}.run must be a function`)
    if (typeof runtime.dispose !== 'function') fail(`${path}.dispose must be a function`)
    if (typeof runtime.capabilities !== 'object' || runtime.capabilities === null) fail(`${path}.capabilities must be an object`)
  })
}
