/**
 * A minimal parked run for tests of the durable layer: one waiting call and an empty journal,
 * with the numbering its park records.
 * @module
 */
import type { ParkedRunState } from '../../src/code-runtime/contract.js'
import { DurableRuns } from '../../src/durable/runs.js'

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

const processes: DurableRuns[] = []

/** A "process": its runs over `store`, its heartbeat stopped by {@link closeProcesses} (call it in `afterEach`). */
export function durableProcess(store: ConstructorParameters<typeof DurableRuns>[0]): DurableRuns {
  const runs = new DurableRuns(store)
  processes.push(runs)
  return runs
}

/** Closes every process {@link durableProcess} made since the last call. */
export function closeProcesses(): void {
  for (const runs of processes.splice(0)) runs.close()
}
