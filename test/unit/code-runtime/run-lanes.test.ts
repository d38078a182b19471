/**
 * The lane queue alone (src/code-runtime/run-lanes.ts): lanes take turns; a lane is first in, first
 * out up to CONGESTED_LANE_RUNS runs, past it its turns alternate oldest / newest, and no run waits
 * more than twice the turns it would first in, first out.
 */
import { describe, expect, it } from 'vitest'
import { CONGESTED_LANE_RUNS, LaneQueue } from '../../../src/code-runtime/run-lanes.js'

interface Run {
  readonly n: number
}

describe('LaneQueue', () => {
  it('is first in, first out in a lane that holds at most CONGESTED_LANE_RUNS runs', () => {
    const queue = new LaneQueue<Run>()
    const runs = Array.from({ length: CONGESTED_LANE_RUNS }, (_, n) => ({ n }))
    for (const run of runs) queue.push('A', run)
    const served: number[] = []
    for (let run = queue.shift(); run !== undefined; run = queue.shift()) served.push(run.n)
    expect(served).toEqual(runs.map((run) => run.n))
  })

  it('a congested lane alternates oldest and newest, back to first in, first out once it is short again', () => {
    const queue = new LaneQueue<Run>()
    const total = CONGESTED_LANE_RUNS + 4
    for (let n = 0; n < total; n++) queue.push('A', { n })
    const served: number[] = []
    for (let run = queue.shift(); run !== undefined; run = queue.shift()) served.push(run.n)
    // 68 waiting: oldest (0), newest (67), oldest (1), newest (66); then 64 waiting: in order.
    expect(served.slice(0, 5)).toEqual([0, total - 1, 1, total - 2, 2])
    expect(served.slice(4)).toEqual(Array.from({ length: total - 4 }, (_, i) => i + 2))
  })

  it('under a steady overload no run waits more than twice the turns it would first in, first out', () => {
    const queue = new LaneQueue<Run>()
    let next = 0
    for (; next < 1_000; next++) queue.push('A', { n: next })
    const servedAt = new Map<number, number>()
    for (let turn = 0; queue.size > 0; turn++) {
      // A new run arrives every turn for the first 3,000 turns: the lane stays congested.
      if (turn < 3_000) queue.push('A', { n: next++ })
      servedAt.set(queue.shift()!.n, turn)
    }
    expect(servedAt.size).toBe(next)
    for (const [n, turn] of servedAt) {
      // First in, first out, run n would be served at turn n.
      expect(turn).toBeLessThanOrEqual(2 * n + 1)
    }
  })

  it('a removed run leaves its lane and the congestion count', () => {
    const queue = new LaneQueue<Run>()
    const runs = Array.from({ length: CONGESTED_LANE_RUNS + 1 }, (_, n) => ({ n }))
    for (const run of runs) queue.push('A', run)
    // 65 waiting would alternate; one removed leaves 64: first in, first out.
    expect(queue.remove(runs[10]!)).toBe(true)
    expect(queue.remove(runs[10]!)).toBe(false)
    expect([queue.shift()!.n, queue.shift()!.n]).toEqual([0, 1])
    expect(queue.size).toBe(CONGESTED_LANE_RUNS - 2)
  })
})
