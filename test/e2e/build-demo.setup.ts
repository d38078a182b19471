/**
 * The e2e project's global setup: builds the playground into demo/dist/ once, before any file
 * runs, so two files never rebuild it at once (the build empties the folder first).
 * @module
 */
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** Runs scripts/build-demo.mjs (incremental: nothing to do when the inputs are unchanged). */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-demo.mjs'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: 'pipe' })
}
