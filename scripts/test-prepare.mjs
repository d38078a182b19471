#!/usr/bin/env node
// What `npm test` does before vitest, overlapped: the structure check, the build (tsc into dist/)
// and the test-only package install followed by the type-check (tsc --noEmit reads
// test/vercel-sdk's packages) run at once, as three lanes; each tsc holds one core, and run one
// after another they took 188 s of a 2-core machine at load 9-12 (build 67 s, type-check 107 s).
// Each step's output prints when it ends; any failing step fails this script, after all have ended.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const node = process.execPath

/** One step: a label for failures and the command, run with `node` from the repository root. */
const lanes = [
  [['structure check', ['scripts/check-structure.mjs', '--quiet']]],
  [['build', ['scripts/build.mjs']]],
  [
    ['test package install', ['scripts/install-test-packages.mjs']],
    ['type-check', ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit']],
  ],
]

/** Runs one step with its output kept; resolves to its exit code (a signal counts as 1). */
function step([label, args]) {
  return new Promise((resolve) => {
    const child = spawn(node, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    child.stdout.on('data', (chunk) => out.push(chunk))
    child.stderr.on('data', (chunk) => out.push(chunk))
    child.on('error', (error) => out.push(Buffer.from(`${error.message}\n`)))
    child.on('close', (code) => {
      process.stdout.write(Buffer.concat(out))
      if (code !== 0) process.stderr.write(`test-prepare: ${label} failed (exit ${code ?? 'signal'})\n`)
      resolve(code ?? 1)
    })
  })
}

/** A lane's steps one after another; the first failure ends the lane. */
async function lane(steps) {
  for (const s of steps) {
    const code = await step(s)
    if (code !== 0) return code
  }
  return 0
}

const codes = await Promise.all(lanes.map(lane))
process.exit(codes.some((code) => code !== 0) ? 1 : 0)
