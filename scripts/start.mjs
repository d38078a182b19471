#!/usr/bin/env node
// `npm start`: runs scripts/build.mjs and scripts/build-demo.mjs only when their up-to-date
// check fails, then starts the server (examples/start.ts, compiled) in this process: one
// Node start-up for a restart with nothing to build instead of four.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { demoUpToDate, packageUpToDate, UP_TO_DATE } from './build-stamp.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const builds = [
  ['build', () => packageUpToDate(root), 'scripts/build.mjs'],
  ['demo', () => demoUpToDate(root), 'scripts/build-demo.mjs'],
]
for (const [name, upToDate, script] of builds) {
  if (upToDate()) {
    console.log(UP_TO_DATE[name])
    continue
  }
  try {
    execFileSync(process.execPath, [script], { cwd: root, stdio: 'inherit' })
  } catch (error) {
    // The build printed why; its exit code is ours.
    process.exit(typeof error.status === 'number' && error.status !== 0 ? error.status : 1)
  }
}

try {
  const { main } = await import('../dist/examples/start.js')
  await main()
} catch (error) {
  console.error(error)
  process.exit(1)
}
