#!/usr/bin/env node
// Bundles the Cloudflare Worker (platforms/edge/worker.ts) for workerd into dist/edge/:
// worker.js plus quickjs.wasm and micropython.wasm (toolyard/python's metered build) beside
// it, each imported as a module (workerd refuses to compile wasm from bytes). `wrangler deploy` does its own bundling from wrangler.toml; this build
// is what the Miniflare tests and the edge bench run, and what any other workerd host
// (a plain workerd config, `wrangler deploy --no-bundle`) can take as is.
//
//   node scripts/build-edge.mjs [--entry platforms/edge/worker.ts] [--outdir dist/edge]
//
// The recipe: platform neutral with the workerd conditions (quickjs-emscripten picks its
// Cloudflare build), ESM, the wasm left as an external module import next to the bundle.
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { build } from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const require = createRequire(import.meta.url)

/** Each wasm the bundle may import: its specifier, the file name beside the bundle, and where that file comes from. */
const WASMS = [
  { specifier: /^@jitl\/quickjs-wasmfile-release-sync\/wasm$/, file: 'quickjs.wasm', source: () => require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm') },
  { specifier: /_micropython-bounded\.wasm$/, file: 'micropython.wasm', source: () => join(root, 'platforms/python/_micropython-bounded.wasm') },
]

const { values } = parseArgs({
  options: {
    entry: { type: 'string', default: 'platforms/edge/worker.ts' },
    outdir: { type: 'string', default: 'dist/edge' },
  },
  strict: true,
})
const outdir = resolve(root, values.outdir)

rmSync(outdir, { recursive: true, force: true })
mkdirSync(outdir, { recursive: true })

const result = await build({
  absWorkingDir: root,
  entryPoints: [values.entry],
  outfile: join(outdir, 'worker.js'),
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  conditions: ['workerd', 'worker', 'browser'],
  mainFields: ['module', 'main'],
  target: 'es2022',
  minify: false,
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
  external: ['*.wasm'],
  plugins: [
    {
      name: 'wasm-modules',
      setup(pluginBuild) {
        // Each import points at a copy beside the bundle, which the host loads as a CompiledWasm
        // module (QuickJS's package exposes its wasm without a .wasm suffix).
        for (const wasm of WASMS) pluginBuild.onResolve({ filter: wasm.specifier }, () => ({ path: `./${wasm.file}`, external: true }))
      },
    },
  ],
})

const imported = new Set(Object.values(result.metafile.outputs).flatMap((output) => output.imports.map((entry) => entry.path)))
const copied = WASMS.filter((wasm) => imported.has(`./${wasm.file}`))
for (const wasm of copied) copyFileSync(wasm.source(), join(outdir, wasm.file))

// workerd has no Node built-ins unless nodejs_compat is on: fail the build if one slipped in.
const nodeImports = Object.values(result.metafile.outputs)
  .flatMap((output) => output.imports)
  .filter((entry) => entry.external && /^(node:|fs$|path$|os$|crypto$|worker_threads$|child_process$)/.test(entry.path))
  .map((entry) => entry.path)
if (nodeImports.length > 0) {
  console.error(`build-edge: the bundle imports Node built-ins: ${[...new Set(nodeImports)].join(', ')}`)
  process.exit(1)
}

const bytes = Object.entries(result.metafile.outputs).find(([file]) => file.endsWith('worker.js'))?.[1].bytes ?? 0
const sizes = copied.map((wasm) => `${wasm.file} (${(statSync(join(outdir, wasm.file)).size / 1024).toFixed(0)} KiB)`)
console.log(`build-edge: ${values.entry} → ${join(outdir, 'worker.js')} (${(bytes / 1024).toFixed(0)} KiB)${sizes.map((s) => ` + ${s}`).join('')}`)
