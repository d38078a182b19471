import { defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * One vitest project per runtime:
 * - `node`: unit, contract and integration suites from source (plus type tests);
 * - `browser`: real Chromium — the CodeRuntime contract on Web Workers and the core unit suites
 *   (vitest.browser.config.ts);
 * - `edge`: the BUILT Cloudflare Worker bundle under real workerd rules (Miniflare);
 * - `workerd`: the core unit suites and the CodeRuntime contract inside workerd
 *   (vitest.workerd.config.ts, @cloudflare/vitest-pool-workers);
 * - `e2e`: the playground driven by Playwright against the `npm start` server
 *   (test/e2e/vitest.config.ts);
 * - `node-paired`, `edge-paired`: the files of `node` and `edge` that want fewer neighbours (PAIRED
 *   below); `node-alone`: the files of `node` that run alone (ALONE below); `node-isolated`: the
 *   files of `node` that keep a module graph of their own (OWN_MODULES below).
 */
/**
 * Files that measure something against the clock (a compute or replay budget, a heartbeat's age
 * between two servers) or hold hundreds of runs in flight: they run last, one at a time, in
 * `node-alone`.
 */
const ALONE = {
  node: [
    'test/unit/http/overload.test.ts',
    'test/unit/durable/runtime-resume-pinned.test.ts',
    'test/unit/durable/run-service-pinned.test.ts',
    'test/unit/quickjs/parking-budget.test.ts',
    'test/unit/sandbox/binding-budgets.test.ts',
    'test/unit/python/thread-budget.test.ts',
    // Failed paired at load 10-18, 2026-12-07: a replay budget, a compute budget a check must beat,
    // a step between two servers past its 60 s bound, a plan read in a thread that fell back.
    'test/unit/postgres/two-instances.test.ts',
    'test/unit/preflight/plan-thread.test.ts',
    'test/unit/sandbox/parking.test.ts',
    'test/unit/python/parking.test.ts',
    'test/unit/python/python-hostile.test.ts',
  ],
}

/**
 * Files that fail with many neighbours (a 30 s test timeout, a calls-in-flight peak, a server's
 * start-up deadline, a restart of Miniflare or of a server) but hold with one: they run after the
 * parallel files, `PARALLEL` at a time with no browser page beside them, in `node-paired`,
 * `edge-paired` and `e2e`. In the order they start: each e2e file (Chromium and a server) between
 * two others, so that two browsers seldom run at once.
 */
const PAIRED = [
  'test/e2e/playground.e2e.test.ts',
  'test/edge/runs-object.test.ts',
  'test/e2e/playground-waiting.e2e.test.ts',
  'test/unit/durable/crash-resume.test.ts',
  'test/e2e/playground-attention.e2e.test.ts',
  'test/edge/telemetry-resume.test.ts',
  'test/e2e/playground-python.e2e.test.ts',
  'test/unit/durable/file-store.test.ts',
  'test/unit/python/python-sandbox.test.ts',
  'test/unit/hostile/hostile-programs.test.ts',
  'test/unit/schema/ajv-differential.test.ts',
  'test/unit/docs/doc-samples.test.ts',
  'test/unit/postgres/live-events.test.ts',
  'test/unit/durable/bound-records.test.ts',
  'test/unit/http/runs-lifecycle.test.ts',
]
/**
 * Files of `node` that keep a module graph of their own (`node-isolated`): the rest of `node` shares
 * one per worker (`isolate: false`). These fake the process's timers and count them
 * (`vi.getTimerCount()`) or step them: a module another file loaded earlier (a turn mark, a
 * pending sweep) can hold a timer there. store-broker-pinned counted 6 timers for 2 that way.
 */
const OWN_MODULES = [
  'test/unit/approvals/broker-store.test.ts',
  'test/unit/approvals/plan-engine.test.ts',
  'test/unit/approvals/store-broker-pinned.test.ts',
  'test/unit/code-mode/catalog.test.ts',
  'test/unit/code-mode/run-code.test.ts',
  'test/unit/code-runtime/host-session.test.ts',
  'test/unit/code-runtime/sliced-delivery.test.ts',
  'test/unit/durable/approvals-broker-core.test.ts',
  'test/unit/durable/approvals-markers.test.ts',
  'test/unit/durable/heartbeat-pinned.test.ts',
  'test/unit/durable/piece-sweep.test.ts',
  'test/unit/durable/run-service.test.ts',
  'test/unit/durable/runs-core.test.ts',
  'test/unit/http/runs-store.test.ts',
  'test/unit/http/stream-backlog.test.ts',
  'test/unit/newcomer/library.test.ts',
  'test/unit/registry/approval-stage.test.ts',
  'test/unit/sandbox/first-run.test.ts',
  'test/unit/sandbox/sandbox-runtime.test.ts',
  'test/unit/sandbox/spare-threads.test.ts',
]

const PAIRED_NODE = PAIRED.filter((file) => file.startsWith('test/unit/'))
const PAIRED_EDGE = PAIRED.filter((file) => file.startsWith('test/edge/'))

/** vitest's group after the parallel one (groups run one after another; `node-alone` comes last). */
const PAIRED_GROUP = { groupOrder: 1 }

/** vitest's order, except that the paired group starts its files in {@link PAIRED}'s order. */
class PairedOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const rank = (spec: TestSpecification) => {
      const index = PAIRED.findIndex((file) => spec.moduleId.endsWith(`/${file}`))
      return index === -1 ? PAIRED.length : index
    }
    const paired = sorted.filter((spec) => spec.project.config.sequence.groupOrder === PAIRED_GROUP.groupOrder)
    const inOrder = [...paired].sort((x, y) => rank(x) - rank(y))
    return sorted.map((spec) => (paired.includes(spec) ? inOrder.shift()! : spec))
  }
}

/**
 * Test files run at once in the parallel group (node, edge and workerd share it; the browser
 * project runs its own page beside them). Most files wait on child processes, servers, threads
 * or a browser, so more files than cores keeps the 2 cores busy; vitest's default is cores - 1.
 */
const PARALLEL = 2

const NODE = {
  include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'engine/**/*.test.ts', 'platforms/**/*.test.ts'],
  // Listing exclude replaces vitest's defaults: node_modules (test/vercel-sdk has its own) must be named again.
  exclude: ['**/node_modules/**', 'test/browser/**', 'test/edge/**', 'test/e2e/**', 'test/workerd/**', 'test/**/*.browser.test.ts'],
  environment: 'node',
  testTimeout: 30_000,
  hookTimeout: 30_000,
}
const EDGE = { include: ['test/edge/*.test.ts'], environment: 'node', testTimeout: 60_000, hookTimeout: 180_000 }

export default defineConfig({
  test: {
    maxWorkers: PARALLEL,
    sequence: { sequencer: PairedOrder },
    projects: [
      {
        test: {
          name: 'node',
          ...NODE,
          exclude: [...NODE.exclude, ...ALONE.node, ...PAIRED_NODE, ...OWN_MODULES],
          // One module graph per worker, not per file: evaluating src/ (sucrase, hono, the registry…)
          // anew for each of ~240 files cost ~1 s a file (26 registry files: 38 s isolated, 12 s not).
          // Every file disposes what it starts and restores what it stubs. OWN_MODULES, the paired
          // and the alone files keep a module graph each.
          isolate: false,
          // The type tests (test/types/*.test-d.ts) are compiled by `npm run typecheck` (the
          // same tsc and tsconfig vitest would use: a wrong inference is a compile error), so
          // `npm test` checks them without vitest's "experimental feature" banner on every run.
          // `TYPE_TESTS=1 npx vitest run --project node test/types` runs them as vitest type tests.
          typecheck: {
            enabled: process.env.TYPE_TESTS === '1',
            include: ['test/**/*.test-d.ts'],
            exclude: ['**/node_modules/**'],
            tsconfig: './tsconfig.json',
          },
        },
      },
      { test: { name: 'node-isolated', ...NODE, include: OWN_MODULES } },
      { test: { name: 'node-paired', ...NODE, include: PAIRED_NODE, sequence: PAIRED_GROUP } },
      // fileParallelism: false puts a project's files in vitest's last, sequential group.
      { test: { name: 'node-alone', ...NODE, include: ALONE.node, fileParallelism: false } },
      { test: { name: 'edge', ...EDGE, exclude: PAIRED_EDGE } },
      { test: { name: 'edge-paired', ...EDGE, include: PAIRED_EDGE, sequence: PAIRED_GROUP } },
      './vitest.workerd.config.ts',
      './vitest.browser.config.ts',
      './test/e2e/vitest.config.ts',
    ],
  },
})
