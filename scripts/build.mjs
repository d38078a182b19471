#!/usr/bin/env node
// Builds the package: checks the generated sources, then `tsc` (JS + .d.ts into dist/), then the
// exports check. Every step fails the build on error. Incremental: when every input (the
// compiled folders, the configs, the lock file, these scripts) hashes as at the last
// successful build (dist/.build-stamp.json) and the exports map's targets exist, nothing
// is rebuilt; `--force` rebuilds anyway.
import { execFileSync } from 'node:child_process'
import { copyFileSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { clearStamp, packageInputsHash, packageUpToDate, UP_TO_DATE, writeStamp } from './build-stamp.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' })
const stamp = fileURLToPath(new URL('../dist/.build-stamp.json', import.meta.url))

const hash = packageInputsHash(root)

if (!process.argv.includes('--force') && packageUpToDate(root, hash)) {
  console.log(UP_TO_DATE.build)
  process.exit(0)
}

// Generated sources (the scripts that run inside sandboxes and threads) are committed and
// readable; the build refuses stale ones (`npm run gen` regenerates them), so what ships
// is what was reviewed.
run(process.execPath, ['scripts/gen-bootstrap.mjs', '--check'])
// The metered MicroPython of toolyard/python, likewise: rebuilt byte for byte from the pinned package.
run(process.execPath, ['scripts/build-micropython-bounded.mjs', '--check'])
clearStamp(stamp)
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })
console.log('build: compiling src/, platforms/, engine/, examples/ and demo/ with tsc into dist/ (a minute or two the first time; later builds skip it while nothing changed)')
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'])
// tsc compiles TypeScript only: the generated Node sandbox thread goes next
// to the compiled runtime that starts it.
copyFileSync(new URL('../platforms/node/_sandbox-thread.cjs', import.meta.url), new URL('../dist/platforms/node/_sandbox-thread.cjs', import.meta.url))
copyFileSync(new URL('../platforms/node/_sandbox-strip.cjs', import.meta.url), new URL('../dist/platforms/node/_sandbox-strip.cjs', import.meta.url))
copyFileSync(new URL('../platforms/node/_python-thread.mjs', import.meta.url), new URL('../dist/platforms/node/_python-thread.mjs', import.meta.url))
for (const file of ['_micropython-bounded.mjs', '_micropython-bounded.wasm']) {
  copyFileSync(new URL(`../platforms/python/${file}`, import.meta.url), new URL(`../dist/platforms/python/${file}`, import.meta.url))
}
run(process.execPath, ['scripts/check-exports.mjs'])
writeStamp(stamp, hash)
