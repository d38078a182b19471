/**
 * A responsiveness probe for tests, in every runtime (Node, Chromium): while `during`
 * runs, a 2 ms interval on the calling thread measures the longest gap between its ticks
 * (`stall`, in ms) and, with a {@link TickCounter}, the most events counted between two
 * ticks (`burst`). A count does not grow with the machine's load as a time does, so
 * tests that must fail on old code assert the burst and keep only a wide time bound.
 */
import { defineTool } from '../../src/schema/define-tool.js'

/** Events the code under test counts (`counter.count++`); the probe reads and resets it each tick. */
export interface TickCounter {
  count: number
}

/** What {@link maxStall} measured, and what `during` returned. */
export interface StallFigures<T> {
  readonly stall: number
  readonly burst: number
  readonly value: T
}

/** Runs `during` under the probe (see the module comment). */
export async function maxStall<T>(during: () => Promise<T>, counter: TickCounter = { count: 0 }): Promise<StallFigures<T>> {
  let last = performance.now()
  let stall = 0
  let burst = 0
  counter.count = 0
  const timer = setInterval(() => {
    const now = performance.now()
    stall = Math.max(stall, now - last)
    last = now
    burst = Math.max(burst, counter.count)
    counter.count = 0
  }, 2)
  try {
    const value = await during()
    return { stall, burst: Math.max(burst, counter.count), value }
  } finally {
    clearInterval(timer)
  }
}

/**
 * The longest stall a call flood may cause in a test, whatever the load: the call counts between
 * ticks are the test (old code 4,400 to 8,200, now dozens); this only backstops a stall that is
 * not calls (a parse, a copy). 1 s failed at load 15-22 (1.2 s, with a burst of dozens).
 */
export const STALL_BACKSTOP_MS = 3_000

/** A program that fires `calls` un-awaited `tools.echo` calls and returns how many settled. */
export const floodProgram = (calls = 10_000): string =>
  `const ps = []; for (let i = 0; i < ${calls}; i++) ps.push(tools.echo({ i })); return (await Promise.all(ps)).length`

/** The flood tests' `echo` tool (`{ i }` → `work(i)`), for a registry: each call runs `work` on the host's thread. */
export function floodEchoTool(work: (i: number) => number = (i) => i) {
  return defineTool({
    name: 'echo',
    description: 'Returns its number.',
    parameters: { i: { type: 'number' } },
    output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
    execute: (args) => work(args.i ?? 0),
  })
}
