#!/usr/bin/env node
// Builds the playground into demo/dist/: index.html, styles.css, main.js (the page:
// registry + demo tools + CodeMirror + the browser runtime) and worker-entry.js (the
// Web Worker, bundled on its own). The runtime's default worker URL is
// `new URL('./worker-entry.js', import.meta.url)`, so placing the worker bundle next
// to main.js is all the wiring the page needs. `--dev` skips minification.
import { build } from 'esbuild'
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = `${root}demo/dist`
const dev = process.argv.includes('--dev')

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
])
copyFileSync(`${root}demo/playground/index.html`, `${out}/index.html`)
copyFileSync(`${root}demo/playground/styles.css`, `${out}/styles.css`)

const kb = (file) => `${(statSync(`${out}/${file}`).size / 1024).toFixed(0)} KB`
console.log(
  `demo built in ${(performance.now() - started).toFixed(0)} ms → demo/dist/ ` +
    `(main.js ${kb('main.js')}, worker-entry.js ${kb('worker-entry.js')})`,
)
