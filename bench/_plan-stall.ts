/**
 * The host's stall while plan approval reads hostile programs (issue 31, item 3): six
 * 256 KiB programs at once, `npm start`'s Code Mode set-up (the sandbox, approvals with
 * plans on, the preflight thread), every request denied; the longest event-loop gap (what
 * `/v1/health` waits) and the wall time until all six ended.
 *
 * @module
 */
import { createPreflightWorker, createSandboxRuntime } from '../platforms/node/index.js'
import { createApprovalBroker } from '../src/approvals/index.js'
import { createToolRuntime } from '../src/registry/index.js'
import { defineTool } from '../src/schema/define-tool.js'
import type { PreflightEngine } from '../src/preflight/types.js'
import type { TableRow } from './_stats.js'

/** Just under the sandbox's 256 KiB program cap. */
const PROGRAM_CHARS = 256 * 1024 - 64
const RUNS = 6

/** A program of `unit` repeated to the cap, after one planned write (so a plan request would go out). */
function program(unit: string): string {
  const head = 'await tools.write_file({ path: "notes.md" })\n'
  return head + unit.repeat(Math.floor((PROGRAM_CHARS - head.length) / unit.length))
}

/** The shapes: many calls (a long plan), and nested generics that spend the stripper's whole work budget. */
export const PLAN_STALL_SHAPES: Readonly<Record<string, string>> = {
  'many calls': program('await tools.read_file({ path: "a" }) // ........\n'),
  'stripper work bound': program('f(<T>(<T>(<T>(x))))\n'),
}

function tool(name: string) {
  return defineTool({ name, description: name, parameters: { path: { type: 'string' } }, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'ok' })
}

/** Six runs of `code` at once; the longest gap of a 5 ms ticker while they go through plan approval (and run, when allowed to). */
async function stall(code: string, plans: boolean, preflightEngine: PreflightEngine | undefined): Promise<{ gap: number; wall: number; plans: number }> {
  const codeRuntime = createSandboxRuntime()
  const broker = createApprovalBroker({ plans })
  let planRequests = 0
  broker.subscribe((event) => {
    if (event.type !== 'requested') return
    if (event.approval.kind === 'plan') planRequests++
    setTimeout(() => broker.decide(event.approval.id, { decision: 'deny' }), 0)
  })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, approvals: broker, ...(preflightEngine === undefined ? {} : { preflightEngine, preflight: 'off' as const }) })
  runtime.register(tool('write_file'))
  runtime.register(tool('read_file'))
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'write_file' ? { kind: 'ask', reason: 'changes the workspace' } : decision))
  // One small run first: threads and compilers warm, as on a server that has been up.
  await runtime.execute({ callId: 'warm', name: 'run_code', arguments: { code: 'return 1', description: 'warm' }, signal: AbortSignal.timeout(30_000) })
  let last = performance.now()
  let gap = 0
  const ticker = setInterval(() => {
    const now = performance.now()
    gap = Math.max(gap, now - last)
    last = now
  }, 5)
  const started = performance.now()
  await Promise.all(Array.from({ length: RUNS }, (_, i) => runtime.execute({ callId: `stall-${i}`, name: 'run_code', arguments: { code, description: 'stall' }, signal: AbortSignal.timeout(120_000) })))
  const wall = performance.now() - started
  // The gap still open when the runs ended counts too (a loop held to the end never ticked).
  gap = Math.max(gap, performance.now() - last)
  clearInterval(ticker)
  await runtime.dispose()
  await codeRuntime.dispose()
  broker.dispose()
  return { gap, wall, plans: planRequests }
}

/** The table: plans off, plans on with the preflight thread (`npm start`), plans on without a preflight engine. */
export async function planStall(): Promise<TableRow[]> {
  const rows: TableRow[] = []
  for (const [shape, code] of Object.entries(PLAN_STALL_SHAPES)) {
    const configs: [string, boolean, () => PreflightEngine | undefined][] = [
      ['plans off', false, () => undefined],
      ['plans on, preflight thread (npm start)', true, () => createPreflightWorker()],
      ['plans on, no preflight engine', true, () => undefined],
    ]
    for (const [label, plans, engine] of configs) {
      const made = engine()
      const { gap, wall, plans: asked } = await stall(code, plans, made)
      await made?.dispose()
      rows.push({ shape, setup: label, 'longest host stall ms': Math.round(gap), 'six runs ended ms': Math.round(wall), 'plan requests': asked })
    }
  }
  return rows
}
