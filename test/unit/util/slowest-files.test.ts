/** The summary reporter's slowest-files table (test/support/project-summary-reporter.ts). */
import { describe, expect, it } from 'vitest'
import type { TestModule } from 'vitest/node'
import { slowestLines } from '../../support/project-summary-reporter.js'

const module = (file: string, duration: number, project = 'node') =>
  ({ relativeModuleId: file, project: { name: project }, diagnostic: () => ({ duration, setupDuration: 100, collectDuration: 400 }) }) as unknown as TestModule

describe('slowestLines', () => {
  it('lists the slowest files first, setup and collection included, at most `limit`', () => {
    const lines = slowestLines([module('a.test.ts', 1_500), module('b.test.ts', 41_500, 'edge'), module('c.test.ts', 500)], 2)
    expect(lines).toEqual(['', ' Slowest 2 files (s)', '     42.0  edge  b.test.ts', '      2.0  node  a.test.ts'])
  })

  it('prints nothing for a run without files', () => {
    expect(slowestLines([])).toEqual([])
  })
})
