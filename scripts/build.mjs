#!/usr/bin/env node
// Builds the package: checks the generated sources, then `tsc` (JS + .d.ts into dist/), then the
// exports check. Every step fails the build on error.
import { execFileSync } from 'node:child_process'
import { copyFileSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' })

// Generated sources (the scripts that run inside sandboxes and threads) are committed and
// readable; the build refuses stale ones (`npm run gen` regenerates them), so what ships
// is what was reviewed.
run(process.execPath, ['scripts/gen-bootstrap.mjs', '--check'])
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'])
// tsc compiles TypeScript only: the generated Node sandbox thread (an ES module) goes next
// to the compiled runtime that starts it.
copyFileSync(new URL('../platforms/node/_sandbox-thread.mjs', import.meta.url), new URL('../dist/platforms/node/_sandbox-thread.mjs', import.meta.url))
run(process.execPath, ['scripts/check-exports.mjs'])
