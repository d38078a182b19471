import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import type { WorkerOptions } from 'miniflare'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** A worker bundled by the product's edge build and served by Miniflare under real workerd rules. */
export interface BuiltWorker {
  readonly mf: Miniflare
  /** Stops workerd and removes the bundle. */
  dispose(): Promise<void>
}

/**
 * Bundles `entry` (a path from the repository root) with `scripts/build-edge.mjs` — the
 * same recipe as the deployed Worker, QuickJS wasm imported as a module — and serves it
 * with Miniflare, whose workerd refuses `eval`/`new Function` (unlike the vitest pool).
 */
export async function startBuiltWorker(entry: string, options: { readonly compatibilityFlags?: string[] } = {}): Promise<BuiltWorker> {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-worker-'))
  execFileSync(process.execPath, ['scripts/build-edge.mjs', '--entry', entry, '--outdir', dir], { cwd: root, stdio: 'pipe' })
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(dir, 'worker.js'),
    modulesRoot: dir,
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    // As wrangler.toml deploys the product.
    compatibilityDate: '2026-04-20',
    compatibilityFlags: options.compatibilityFlags ?? [],
  })
  await mf.ready
  return {
    mf,
    dispose: async () => {
      await mf.dispose()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The product Worker built into a fresh temporary directory by `scripts/build-edge.mjs` (wrangler.toml's recipe). */
export function buildProductWorker(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  execFileSync(process.execPath, ['scripts/build-edge.mjs', '--outdir', dir], { cwd: root, stdio: 'pipe' })
  return dir
}

/**
 * Miniflare's options for the product Worker built in `dir`, with `bindings` (its tokens) and,
 * unless `persist` is `false`, its Durable Objects bound as wrangler.toml binds them (SQLite-backed)
 * with their storage in `persist`.
 */
export function productWorkerOptions(dir: string, bindings: Record<string, string>, persist: string | false): WorkerOptions {
  return {
    modules: true,
    compatibilityDate: '2026-04-20',
    compatibilityFlags: ['enable_request_signal'],
    scriptPath: join(dir, 'worker.js'),
    modulesRoot: dir,
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    bindings,
    ...(persist === false
      ? {}
      : {
          durableObjects: { RUNS: { className: 'ToolyardRun', useSQLite: true }, RUN_INDEX: { className: 'ToolyardRunIndex', useSQLite: true } },
          durableObjectsPersist: persist,
        }),
  } as WorkerOptions
}
