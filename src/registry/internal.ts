/**
 * Internal seams of the registry, shared with `scheduler.ts` and `timeout-policy.ts`.
 * Not part of the public API: nothing here is re-exported from the package root.
 *
 * @module
 */
import type { AnyToolDefinition } from '../types.js'
import { dispatchViewDefinition } from './pipeline.js'

/**
 * The key under which a runtime made by `createToolRuntime` carries its schedulable
 * execute variant (non-enumerable, so it never shows up in the public shape).
 */
export const INTERNAL_EXECUTE: unique symbol = Symbol('toolyard.internalExecute')

/**
 * Callbacks a batch scheduler hands to one execution so that only dispatch and body
 * overlap. Each callback is invoked exactly once per execution, in this order:
 * `beforePolicy` (awaited before any policy phase), `afterPolicy` (when the call leaves
 * its policy phases, dispatching or not), `dispatch` (at most once: runs the wrappers
 * and the body), `beforeTail` (awaited before post-policy / finalization / observation),
 * `afterTail` (after `tools/result` observed the final result).
 */
export interface PipelineSchedule {
  /** Resolves when this call may run its policy phases. */
  beforePolicy(): Promise<void>
  /** The call has left its policy phases. */
  afterPolicy(): void
  /**
   * Runs `task` (wrappers + body) when the scheduler allows. A rejection without the
   * task having started means the call was abandoned: `ABORTED_BEFORE_DISPATCH`.
   */
  dispatch<T>(task: () => Promise<T>): Promise<T>
  /** Resolves when this call may run its tail. */
  beforeTail(): Promise<void>
  /** The call published its result. */
  afterTail(): void
}

/**
 * The frozen definition a `tools/execute` view resolved to (shadowing applied), or
 * `undefined` for an object that is not a live dispatch view of a toolyard runtime.
 */
export const dispatchDefinition: (view: unknown) => AnyToolDefinition | undefined = dispatchViewDefinition
