// A StrykerJS reporter (loaded by stryker.config.mjs through `appendPlugins`): after a run,
// prints the mutation score of each mutated folder (`src/<folder>`), with its mutant counts,
// and writes the same table to reports/mutation/summary.txt.
//
// Score, as Stryker computes it: (killed + timeout) / (killed + timeout + survived + no
// coverage). Mutants marked `// Stryker disable …` (ignored) and mutants that do not compile
// or crash the runtime are left out of both sides.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { PluginKind, declareClassPlugin } from '@stryker-mutator/api/plugin'

const OUTPUT = 'reports/mutation/summary.txt'
/** The score each folder must reach (issue 13). Below it, the row is flagged. */
const TARGET = 85

/** `src/registry/pipeline.ts` → `src/registry`; a file directly in `src/` is its own row. */
const folderOf = (file) => file.split('/').slice(0, 2).join('/')

function tally(files) {
  const rows = new Map()
  for (const [file, result] of Object.entries(files)) {
    const folder = folderOf(file.replaceAll('\\', '/'))
    const row = rows.get(folder) ?? { folder, killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0 }
    for (const mutant of result.mutants) {
      if (mutant.status === 'Killed') row.killed++
      else if (mutant.status === 'Timeout') row.timeout++
      else if (mutant.status === 'Survived') row.survived++
      else if (mutant.status === 'NoCoverage') row.noCoverage++
      else if (mutant.status === 'Ignored') row.ignored++
      else row.errors++
    }
    rows.set(folder, row)
  }
  return [...rows.values()].sort((a, b) => a.folder.localeCompare(b.folder))
}

function render(rows) {
  const header = ['folder', 'score', 'killed', 'timeout', 'survived', 'no cov', 'ignored', 'errors']
  const lines = rows.map((r) => {
    const valid = r.killed + r.timeout + r.survived + r.noCoverage
    const score = valid === 0 ? 'n/a' : `${((100 * (r.killed + r.timeout)) / valid).toFixed(2)} %`
    const flag = valid > 0 && (100 * (r.killed + r.timeout)) / valid < TARGET ? `  < ${TARGET} %` : ''
    return [r.folder, score, r.killed, r.timeout, r.survived, r.noCoverage, r.ignored, r.errors].map(String).concat(flag)
  })
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)))
  const format = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : i < header.length ? c.padStart(widths[i]) : c)).join('  ').trimEnd()
  return ['Mutation score by folder', format(header), ...lines.map(format)].join('\n')
}

class FolderSummaryReporter {
  onMutationTestReportReady(report) {
    const text = render(tally(report.files))
    console.log(`\n${text}\n`)
    mkdirSync(dirname(OUTPUT), { recursive: true })
    writeFileSync(OUTPUT, `${text}\n`)
  }
}

export const strykerPlugins = [declareClassPlugin(PluginKind.Reporter, 'folder-summary', FolderSummaryReporter)]
