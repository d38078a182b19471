/**
 * A setup file of vitest.stryker.config.ts only: skips the test cases whose full name
 * matches TOOLYARD_MUTATION_SKIP_TESTS (a regular expression), so one mutation run can
 * leave out a few slow cases of a file it otherwise needs. Stryker attributes no coverage
 * to a skipped case (it is skipped before its body runs), so a mutant only those cases
 * reach shows as "no coverage": the score is a lower bound, never flattered. Used for the
 * 100,000-level stack-safety cases (3–10 s each uninstrumented, 30 s and more under
 * Stryker's per-test coverage), whose runs would otherwise be most of a folder's time:
 * every surviving mutant runs every case that covers it. docs/testing.md lists the runs.
 */
import { beforeEach } from 'vitest'

/**
 * Cases skipped in every Stryker run (`npm test` still runs them): a wall-clock bound on
 * uninstrumented code, which Stryker's per-test coverage counters make tens of times
 * slower (the megabyte-long name against 5,000 names: ~0.3 s under `npm test`, 66 s in the
 * full dry run, over its 10 s bound). (The fake-timer count once skipped here runs again:
 * test/support/mutation-timers.ts ends each file's leftover timers.)
 */
const ALWAYS_SKIPPED = [
  'closestNames stays bounded: a megabyte-long name against 5,000 names',
]

const pattern = [process.env.TOOLYARD_MUTATION_SKIP_TESTS ?? '', ...ALWAYS_SKIPPED.map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))].filter((part) => part !== '').join('|')
if (pattern !== '') {
  const skip = new RegExp(pattern)
  beforeEach((context) => {
    const names: string[] = []
    for (let task: { name: string; suite?: unknown } | undefined = context.task; task !== undefined; task = task.suite as typeof task) names.unshift(task.name)
    if (skip.test(names.join(' '))) context.skip()
  })
}
