#!/usr/bin/env node
// Fails when package.json's `exports` map and the built files drift apart: every
// target must exist, `types` must come first in every condition object, and publint
// must report no errors. `--targets-only` checks the targets' existence alone (the
// incremental build's up-to-date path: publint's verdict cannot change when no input did).
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
const problems = []

function visit(subpath, target) {
  if (typeof target === 'string') {
    if (!existsSync(new URL(`../${target}`, import.meta.url))) problems.push(`${subpath}: ${target} does not exist`)
    return
  }
  const keys = Object.keys(target)
  if (keys.includes('types') && keys[0] !== 'types') problems.push(`${subpath}: "types" must be the first condition`)
  for (const key of keys) visit(`${subpath} [${key}]`, target[key])
}
for (const [subpath, target] of Object.entries(pkg.exports)) visit(subpath, target)

if (process.argv.includes('--targets-only')) {
  if (problems.length > 0) {
    console.error(`exports check failed:\n  ${problems.join('\n  ')}`)
    process.exit(1)
  }
  process.exit(0)
}

const { publint } = await import('publint')
const { messages } = await publint({ pkgDir: root, level: 'warning' })
for (const m of messages) if (m.type === 'error' || m.type === 'warning') problems.push(`publint ${m.type}: ${m.code} ${JSON.stringify(m.args)}`)

if (problems.length > 0) {
  console.error(`exports check failed:\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
console.log(`exports check: ${Object.keys(pkg.exports).length} subpaths, all built, publint clean`)
