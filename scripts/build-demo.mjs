#!/usr/bin/env node
// Builds the playground into demo/dist/: index.html, styles.css, main.js (the page:
// registry + demo tools + CodeMirror + the sandbox runtime), sandbox-worker-entry.js (the
// sandbox's Web Worker: QuickJS, bundled on its own) with QuickJS's emscripten-module.wasm
// beside it, python-worker-entry.js (MicroPython) with micropython.wasm beside it, and
// worker-entry.js (the trusted-code worker runtime's entry). Each runtime's
// default worker URL is `new URL('./<entry>.js', import.meta.url)`, and the bundled QuickJS
// looks for its wasm next to the bundle, so placing the files side by side is all the
// wiring the page needs. `--dev` skips minification. Incremental like the package build:
// when every input hashes as at the last successful build (demo/dist/.build-stamp.json),
// nothing is rebuilt; `--force` rebuilds anyway.
import { build } from 'esbuild'
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { demoInputsHash, demoUpToDate, UP_TO_DATE, writeStamp } from './build-stamp.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = `${root}demo/dist`
const dev = process.argv.includes('--dev')
const stamp = `${out}/.build-stamp.json`

const hash = demoInputsHash(root, dev)
if (!process.argv.includes('--force') && demoUpToDate(root, dev, hash)) {
  console.log(UP_TO_DATE.demo)
  process.exit(0)
}

rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })

const common = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: !dev,
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
  absWorkingDir: root,
  // The core is platform-neutral; nothing here may pull a Node built-in into the page.
  conditions: ['browser', 'import', 'default'],
}

const started = performance.now()
await Promise.all([
  build({ ...common, entryPoints: { main: 'demo/playground/main.ts' }, outdir: out }),
  build({ ...common, entryPoints: { 'worker-entry': 'platforms/browser/worker-entry.ts' }, outdir: out }),
  build({ ...common, entryPoints: { 'sandbox-worker-entry': 'platforms/browser/sandbox-worker-entry.ts' }, outdir: out }),
  // MicroPython's Node-only branches import Node built-ins; never reached in a browser (docs/python.md).
  build({ ...common, entryPoints: { 'python-worker-entry': 'platforms/browser/python-worker-entry.ts' }, outdir: out, external: ['module', 'path', 'url', 'fs'] }),
])
const require = createRequire(import.meta.url)
copyFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'), `${out}/emscripten-module.wasm`)
// The metered MicroPython (its budget check stops a hot loop in place), under the name the worker looks for.
copyFileSync(`${root}platforms/python/_micropython-bounded.wasm`, `${out}/micropython.wasm`)
copyFileSync(`${root}demo/playground/index.html`, `${out}/index.html`)
copyFileSync(`${root}demo/playground/styles.css`, `${out}/styles.css`)
writeStamp(stamp, hash)

const kb = (file) => `${(statSync(`${out}/${file}`).size / 1024).toFixed(0)} KB`
console.log(
  `demo built in ${(performance.now() - started).toFixed(0)} ms → demo/dist/ ` +
    `(main.js ${kb('main.js')}, sandbox-worker-entry.js ${kb('sandbox-worker-entry.js')} + emscripten-module.wasm ${kb('emscripten-module.wasm')}, worker-entry.js ${kb('worker-entry.js')}, python-worker-entry.js ${kb('python-worker-entry.js')} + micropython.wasm ${kb('micropython.wasm')})`,
)
