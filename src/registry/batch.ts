/**
 * `runToolCalls`: a model's batch of calls run the way the seed's agent loop does.
 * @module
 */
import { ToolError } from '../errors.js'
import type { ToolRuntime } from '../runtime-types.js'
import { createCallPool } from '../scheduler.js'
import type { ToolExecutionInput, ToolExecutionMode, ToolExecutionResult } from '../types.js'
import { refuseUnknownOptions } from '../util/unknown-field.js'
import type { Execute } from './context.js'
import type { PipelineSchedule } from './schedule.js'

const pipelines = new WeakMap<ToolRuntime, Execute>()

/** Makes `runtime`'s pipeline entry (which takes a schedule) available to {@link runToolCalls} (called once, by `createToolRuntime`). */
export function registerBatchPipeline(runtime: ToolRuntime, execute: Execute): void {
  pipelines.set(runtime, execute)
}

/** Options of {@link runToolCalls}. */
export interface RunToolCallsOptions {
  /** Bound of the rolling pool for consecutive concurrency-safe calls. Default 10. */
  readonly maxParallel?: number
}

function classify(runtime: ToolRuntime, call: ToolExecutionInput): ToolExecutionMode {
  let mode: unknown
  try {
    mode = runtime.executionMode(call)
  } catch {
    // A classifier that throws fails closed: the call runs alone.
  }
  // Stryker disable next-line StringLiteral: the call pool runs any mode but 'parallel' as exclusive
  return mode === 'parallel' ? 'parallel' : 'exclusive'
}

/**
 * Runs a model's batch of calls the way the seed's agent loop does: consecutive concurrency-safe
 * calls share a bounded rolling pool, an exclusive call drains the pool, runs alone and bars later
 * calls.
 * @example
 * ```ts
 * const results = await runToolCalls(runtime, modelCalls.map((c) => ({ ...c, signal })), { maxParallel: 4 })
 * ```
 */
export async function runToolCalls(
  runtime: ToolRuntime,
  calls: readonly ToolExecutionInput[],
  options: RunToolCallsOptions = {},
): Promise<ToolExecutionResult[]> {
  if (!Array.isArray(calls)) throw new ToolError('INVALID_OPTIONS', 'runToolCalls expects an array of calls')
  // A misspelt bound (`maxParalel`) would leave the pool at its default without a word.
  refuseUnknownOptions(options, ['maxParallel'], (message) => {
    throw new ToolError('INVALID_OPTIONS', `runToolCalls: ${message}`)
  })
  const pool = createCallPool({ maxParallel: options.maxParallel ?? 10 })
  const scheduled = pipelines.get(runtime)

  let previousPolicy: Promise<void> = Promise.resolve()
  let previousTail: Promise<void> = Promise.resolve()
  const results: Promise<ToolExecutionResult>[] = []
  for (const call of calls) {
    const mode = classify(runtime, call)
    if (scheduled === undefined) {
      results.push(pool.submit(mode, () => runtime.execute(call)))
      continue
    }
    const turns = { policy: previousPolicy, tail: previousTail }
    let releasePolicy!: () => void
    let releaseTail!: () => void
    previousPolicy = new Promise<void>((resolve) => (releasePolicy = resolve))
    previousTail = new Promise<void>((resolve) => (releaseTail = resolve))
    // Policy and tail wait for the previous call's turn.
    const schedule: PipelineSchedule = {
      phase: (phase, run) => {
        if (phase === 'policy') return turns.policy.then(run)
        if (phase === 'dispatch') {
          const dispatched = pool.submit(mode, run)
          releasePolicy()
          return dispatched
        }
        releasePolicy()
        return turns.tail.then(run).finally(releaseTail)
      },
    }
    results.push(scheduled(call, { schedule }))
  }
  return Promise.all(results)
}
