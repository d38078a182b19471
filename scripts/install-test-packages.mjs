#!/usr/bin/env node
// Installs the small test-only packages that live apart from the root package, once:
// test/vercel-sdk (the Vercel AI SDK the provider adapter is checked against; its
// `engines` field asks for Node 22 while the project supports Node 20, so it is kept out
// of the root's devDependencies and a newcomer's `npm ci` stays clean — see its README).
// Quiet on purpose: npm would repeat the package's engines declaration as a warning on
// Node 20, where its tests pass. Run by `npm test` before the type-check.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
for (const folder of ['test/vercel-sdk']) {
  if (existsSync(`${root}${folder}/node_modules/.package-lock.json`)) continue
  console.log(`installing ${folder} (npm ci)`)
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  execFileSync(npm, ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: `${root}${folder}`, stdio: 'inherit' })
}
