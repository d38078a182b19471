import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/** The committed sandbox bundle must match its sources (the shared bootstrap included). */
describe('platforms/quickjs/_sandbox-source.ts', () => {
  it('is current with _sandbox-entry.ts and src/code-runtime/bootstrap.ts', () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url))
    const out = execFileSync(process.execPath, ['platforms/quickjs/gen-sandbox-source.mjs', '--check'], { cwd: root, encoding: 'utf8' })
    expect(out).toContain('is current')
  })
})
