/**
 * What Ctrl+C does to runs is said the same everywhere (issue 35 item 4): wherever README.md
 * or docs/ say what Ctrl+C / SIGINT does to npm start's runs, the same sentence says that a
 * run parked waiting for a person stays and resumes; so does the line npm start prints.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** The paragraphs (blank-line separated) that say what Ctrl+C or SIGINT does to runs or calls. */
function mentions(): { where: string; text: string }[] {
  return files.flatMap((file) =>
    readFileSync(join(root, file), 'utf8')
      .split(/\n\s*\n/)
      .filter((paragraph) => /Ctrl[+-]C|SIGINT/.test(paragraph) && /\b(running|in flight)\b/.test(paragraph))
      .map((text) => ({ where: `${file}: ${text.slice(0, 80)}`, text })),
  )
}

describe('the Ctrl+C wording', () => {
  it('every doc paragraph about what Ctrl+C does to runs says parked runs stay and resume', () => {
    const found = mentions()
    expect(found.length).toBeGreaterThanOrEqual(4)
    for (const { where, text } of found) expect(text, where).toMatch(/parked/)
    for (const { where, text } of found) expect(text, where).toMatch(/resum/)
  })

  it('npm start says the same when it shuts down', () => {
    const start = readFileSync(join(root, 'examples/start.ts'), 'utf8')
    expect(start).toMatch(/shutting down — runs waiting for a person stay parked in \$\{dataDir\} and resume at the next start; other in-flight runs are aborted/)
  })
})
