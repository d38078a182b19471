/**
 * Docs that agree with what happens (issue 35 item 5), checked on the text: one token
 * variable (`$TOKEN`) in every command sample, approval ids as `npm start` makes them
 * (`<32 hex>.<uuid>`, never a bare UUID), and `npm run dev:edge` told how to set a local
 * token wherever it is offered (README, .dev.vars.example, the edge's 503 message).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { findCommandSamples } from '../docs/commands.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const read = (file: string) => readFileSync(join(root, file), 'utf8')
const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]

describe('samples that agree with npm start', () => {
  it('every command sample says $TOKEN (or $APPROVER), never $TOOLYARD_TOKEN', () => {
    const samples = files.flatMap((file) => findCommandSamples(file, read(file), file === 'README.md'))
    expect(samples.length).toBeGreaterThan(20)
    for (const sample of samples) {
      expect(sample.commands.join('\n'), `${sample.file}:${sample.line}`).not.toMatch(/\$\{?TOOLYARD_(APPROVER_)?TOKEN\b/)
    }
  })

  it('an approval id in a sample has npm start’s form <32 hex>.<uuid>, not a bare UUID', () => {
    const uuid = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
    const bare = new RegExp(`(/v1/approvals/|"approvalId":"|\\{"id":"|"approvals":\\[\\{"id":")(${uuid})"?`, 'g')
    let seen = 0
    for (const file of files) {
      const text = read(file)
      seen += [...text.matchAll(new RegExp(`[0-9a-f]{32}\\.${uuid}`, 'g'))].length
      for (const match of text.matchAll(bare)) {
        // A run's id is a bare UUID; an approval's follows /v1/approvals/ or sits in an approvals list.
        if (match[1] === '{"id":"') continue
        expect.soft(match[0], `${file}: an approval id without its 32-hex prefix`).toBe('')
      }
    }
    expect(seen).toBeGreaterThan(0)
  })

  it('npm run dev:edge: README, .dev.vars.example and the edge’s NOT_CONFIGURED message say how to set a local token', () => {
    const readme = read('README.md').split('\n').filter((line) => line.includes('npm run dev:edge'))
    expect(readme.length).toBeGreaterThan(0)
    for (const line of readme) expect(line).toContain('cp .dev.vars.example .dev.vars')
    const example = read('.dev.vars.example')
    expect(example).toMatch(/^TOOLYARD_TOKEN=$/m)
    expect(example).toMatch(/^TOOLYARD_APPROVER_TOKEN=$/m)
    expect(read('platforms/edge/_edge-app.ts')).toMatch(/locally under `npm run dev:edge`: `cp \.dev\.vars\.example \.dev\.vars`/)
  })
})
