/**
 * `npm run bench`: every benchmark, one after another, each in its own process so one
 * bench's heap and workers never skew the next. Figures are printed, never asserted.
 * `npm run bench -- schema http` runs only the named ones.
 *
 * @module
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ALL = ['schema', 'pipeline', 'sandbox', 'sub-call', 'first-runs', 'strip', 'binding-args', 'code-runtime', 'quickjs', 'catalog', 'preflight', 'token-economy', 'http', 'edge', 'browser', 'demo-tools', 'durable-store', 'durable-runs', 'parking-pressure', 'python', 'python-browser', 'playground-flood'] as const

const root = fileURLToPath(new URL('..', import.meta.url))
const wanted = process.argv.slice(2)
const selected = wanted.length > 0 ? ALL.filter((name) => wanted.includes(name)) : [...ALL]
let failed = 0

for (const name of selected) {
  const file = `bench/${name}.bench.ts`
  if (!existsSync(new URL(`../${file}`, import.meta.url))) continue
  console.log(`\n━━━ ${name} ━━━`)
  const result = spawnSync(process.execPath, ['--import', 'tsx', file], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) {
    failed++
    console.error(`bench ${name} exited with ${result.status ?? result.signal}`)
  }
}
process.exit(failed === 0 ? 0 : 1)
