#!/usr/bin/env node
// Builds the package: generated sources, then `tsc` (JS + .d.ts into dist/), then the
// exports check. Every step fails the build on error.
import { execFileSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' })

// Generated sources (worker and sandbox scripts embedded as strings) are committed; the
// build regenerates them so a stale copy can never ship.
run(process.execPath, ['scripts/gen-bootstrap.mjs'])
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'])
run(process.execPath, ['scripts/check-exports.mjs'])
