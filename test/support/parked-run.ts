/**
 * A minimal parked run for tests of the durable layer: one waiting call and an empty journal,
 * with the numbering its park records.
 * @module
 */
import type { ParkedRunState } from '../../src/code-runtime/contract.js'

/** A parked state whose one unsettled call is `tools.<name>({})`. */
export function parkedState(name: string): ParkedRunState {
  return {
    version: 1,
    vm: { clockMs: 0, timers: [], journal: { inputs: [], reads: [], ops: '', calls: [] } } as unknown as ParkedRunState['vm'],
    logs: [],
    logBytes: 0,
    logTruncated: false,
    busyMs: 0,
    wallMs: 0,
    lastCallId: 1,
    calls: [{ id: 1, global: 'tools', name, args: {} }],
  }
}

/** The numbering of a run parked at its first call. */
export const FIRST_CALL_NUMBERING = { submitted: 1, calls: [[1, 1]] as const }
