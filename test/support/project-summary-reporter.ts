/**
 * A vitest reporter that prints, at the end of a run, one line per project (files, passed,
 * failed, skipped, and when its first file started and its last ended) and the slowest test
 * files; `npm test` pairs it with vitest's `dot` reporter.
 * @module
 */
import type { Reporter, TestModule } from 'vitest/node'

interface ProjectCounts {
  files: number
  /** When its first file started and its last ended (ms since the run began): where the wall time went. */
  from: number
  to: number
  passed: number
  failed: number
  skipped: number
}

const count = (n: number): string => n.toLocaleString('en-US')

/** How many of the slowest files the summary lists (the dot reporter prints no per-file time). */
export const SLOWEST_FILES = 15

/** The `limit` slowest modules as table lines: seconds (tests and hooks, plus setup and collection), project, file. */
export function slowestLines(testModules: ReadonlyArray<TestModule>, limit = SLOWEST_FILES): string[] {
  const timed = testModules.map((module) => {
    const d = module.diagnostic()
    return { ms: d.duration + d.setupDuration + d.collectDuration, project: module.project.name || '(root)', file: module.relativeModuleId }
  })
  const slowest = timed.sort((a, b) => b.ms - a.ms).slice(0, limit)
  if (slowest.length === 0) return []
  const width = Math.max(...slowest.map((t) => t.project.length))
  return ['', ` Slowest ${slowest.length} files (s)`, ...slowest.map((t) => `   ${(t.ms / 1000).toFixed(1).padStart(6)}  ${t.project.padEnd(width)}  ${t.file}`)]
}

/** A module's key in the span table: one file can run in two projects. */
const spanKey = (module: TestModule): string => `${module.project.name}\0${module.moduleId}`

const seconds = (ms: number): string => (ms / 1000).toFixed(0)

/** Prints a per-project summary after every other reporter's per-test output. */
export default class ProjectSummaryReporter implements Reporter {
  readonly #began = Date.now()
  /** Each file's wall span (ms since the run began), by module id and project. */
  readonly #spans = new Map<string, { from: number; to: number }>()

  onTestModuleStart(module: TestModule): void {
    this.#spans.set(spanKey(module), { from: Date.now() - this.#began, to: Date.now() - this.#began })
  }

  onTestModuleEnd(module: TestModule): void {
    const span = this.#spans.get(spanKey(module))
    if (span !== undefined) span.to = Date.now() - this.#began
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const projects = new Map<string, ProjectCounts>()
    for (const module of testModules) {
      const name = module.project.name || '(root)'
      const counts = projects.get(name) ?? { files: 0, passed: 0, failed: 0, skipped: 0, from: Infinity, to: 0 }
      projects.set(name, counts)
      counts.files++
      const span = this.#spans.get(spanKey(module))
      if (span !== undefined) {
        counts.from = Math.min(counts.from, span.from)
        counts.to = Math.max(counts.to, span.to)
      }
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
      const when = c.to > 0 ? `, ${seconds(c.from)}-${seconds(c.to)} s` : ''
      lines.push(`   ${name.padEnd(width)}  ${parts.join(', ')} (${count(c.files)} files${when})`)
    }
    process.stdout.write(`${[...lines, ...slowestLines(testModules)].join('\n')}\n`)
  }
}
