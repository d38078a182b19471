/**
 * A vitest reporter that prints one line per project (files, passed, failed, skipped) at
 * the end of a run. `npm test` pairs it with vitest's `dot` reporter, so a green run
 * shows a row of dots, this table and vitest's own final count; a failure is printed in
 * full by the `dot` reporter.
 *
 * @module
 */
import type { Reporter, TestModule } from 'vitest/node'

interface ProjectCounts {
  files: number
  passed: number
  failed: number
  skipped: number
}

const count = (n: number): string => n.toLocaleString('en-US')

/** Prints a per-project summary after every other reporter's per-test output. */
export default class ProjectSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const projects = new Map<string, ProjectCounts>()
    for (const module of testModules) {
      const name = module.project.name || '(root)'
      const counts = projects.get(name) ?? { files: 0, passed: 0, failed: 0, skipped: 0 }
      projects.set(name, counts)
      counts.files++
      // A file that failed to load has no tests: count it as a failure of its own.
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') counts.passed++
        else if (state === 'failed') counts.failed++
        else counts.skipped++
      }
    }
    if (projects.size === 0) return
    const width = Math.max(...[...projects.keys()].map((name) => name.length))
    const lines = ['', ' Per project']
    for (const [name, c] of [...projects].sort(([a], [b]) => a.localeCompare(b))) {
      const parts = [`${count(c.passed)} passed`]
      if (c.failed > 0) parts.push(`${count(c.failed)} FAILED`)
      if (c.skipped > 0) parts.push(`${count(c.skipped)} skipped`)
      lines.push(`   ${name.padEnd(width)}  ${parts.join(', ')} (${count(c.files)} files)`)
    }
    process.stdout.write(`${lines.join('\n')}\n`)
  }
}
