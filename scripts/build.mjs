#!/usr/bin/env node
// Builds the package: checks the generated sources, then `tsc` (JS + .d.ts into dist/), then the
// exports check. Every step fails the build on error. Incremental: when every input (the
// compiled folders, the configs, the lock file, these scripts) hashes as at the last
// successful build (dist/.build-stamp.json), only the exports map's targets are checked
// for existence and nothing is rebuilt; `--force` rebuilds anyway.
import { execFileSync } from 'node:child_process'
import { copyFileSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { clearStamp, hashInputs, isUpToDate, writeStamp } from './build-stamp.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' })
const stamp = fileURLToPath(new URL('../dist/.build-stamp.json', import.meta.url))

/** What the build reads: tsconfig.build.json's folders, the configs, the lock (compiler, esbuild) and the build's own scripts. */
const BUILD_INPUTS = [
  'src', 'engine', 'platforms', 'demo', 'examples',
  'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json',
  'scripts/build.mjs', 'scripts/build-stamp.mjs', 'scripts/gen-bootstrap.mjs', 'scripts/check-exports.mjs',
]
const { hash } = hashInputs(root, BUILD_INPUTS, { skip: ['demo/dist'] })

if (!process.argv.includes('--force') && isUpToDate(stamp, hash)) {
  try {
    // A deleted build output is not up to date: the cheap half of the exports check says so.
    execFileSync(process.execPath, ['scripts/check-exports.mjs', '--targets-only'], { cwd: root, stdio: 'pipe' })
    console.log('build: up to date (no input changed since the last build; `npm run build -- --force` rebuilds)')
    process.exit(0)
  } catch {
    // Fall through to a full build.
  }
}

// Generated sources (the scripts that run inside sandboxes and threads) are committed and
// readable; the build refuses stale ones (`npm run gen` regenerates them), so what ships
// is what was reviewed.
run(process.execPath, ['scripts/gen-bootstrap.mjs', '--check'])
clearStamp(stamp)
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'])
// tsc compiles TypeScript only: the generated Node sandbox thread (an ES module) goes next
// to the compiled runtime that starts it.
copyFileSync(new URL('../platforms/node/_sandbox-thread.mjs', import.meta.url), new URL('../dist/platforms/node/_sandbox-thread.mjs', import.meta.url))
copyFileSync(new URL('../platforms/node/_python-thread.mjs', import.meta.url), new URL('../dist/platforms/node/_python-thread.mjs', import.meta.url))
run(process.execPath, ['scripts/check-exports.mjs'])
writeStamp(stamp, hash)
