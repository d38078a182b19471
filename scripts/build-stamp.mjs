// The up-to-date check of the builds (`npm run build`, `npm run build:demo`): a hash of
// every input's path and bytes, kept as a stamp next to the outputs once a build has
// succeeded. A build whose stamp matches its inputs' hash has nothing to do; anything
// else (an edited, added or removed input, a different dependency lock, a missing or
// unreadable stamp) builds again. Content, not mtimes: a checkout or `touch` that leaves
// the bytes alone costs nothing, and an edit within the same second is still seen.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'

/** What the package build reads: tsconfig.build.json's folders, the configs, the lock (compiler, esbuild) and the build's own scripts. */
export const BUILD_INPUTS = [
  'src', 'engine', 'platforms', 'demo', 'examples',
  'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json',
  'scripts/build.mjs', 'scripts/build-stamp.mjs', 'scripts/gen-bootstrap.mjs', 'scripts/check-exports.mjs',
]
/** What the playground's bundles read: the page, the core, the platforms, the engine, the lock (esbuild, QuickJS's wasm) and the scripts. */
export const DEMO_INPUTS = ['demo', 'src', 'platforms', 'engine', 'package.json', 'package-lock.json', 'scripts/build-demo.mjs', 'scripts/build-stamp.mjs']
/** The files scripts/build-demo.mjs writes into demo/dist/. */
export const DEMO_OUTPUTS = ['index.html', 'styles.css', 'main.js', 'worker-entry.js', 'sandbox-worker-entry.js', 'emscripten-module.wasm', 'python-worker-entry.js', 'micropython.wasm']
/** What each build prints when it has nothing to do. */
export const UP_TO_DATE = {
  build: 'build: up to date (no input changed since the last build; `npm run build -- --force` rebuilds)',
  demo: 'demo: up to date (no input changed since the last build; `npm run build:demo -- --force` rebuilds)',
}

/**
 * The hash of `inputs` under `root`: each a file or a folder (walked whole, skipping any
 * folder named in `skip` and `node_modules`), plus `extra` (options that change the
 * output, such as `--dev`). Paths and bytes both count; a missing input counts as missing.
 */
export function hashInputs(root, inputs, { skip = [], extra = [] } = {}) {
  const skipped = new Set(skip.map((path) => join(root, path)))
  const files = []
  const visit = (path) => {
    let stat
    try {
      stat = statSync(path)
    } catch {
      files.push([relative(root, path).split(sep).join('/'), null])
      return
    }
    if (stat.isDirectory()) {
      if (skipped.has(path) || path.endsWith(`${sep}node_modules`)) return
      for (const name of readdirSync(path)) visit(join(path, name))
    } else if (stat.isFile()) files.push([relative(root, path).split(sep).join('/'), path])
  }
  for (const input of inputs) visit(join(root, input))
  files.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const hash = createHash('sha256')
  hash.update(JSON.stringify(extra))
  for (const [name, path] of files) {
    hash.update(`\0${name}\0`)
    hash.update(path === null ? '(missing)' : readFileSync(path))
  }
  return { hash: hash.digest('hex'), files: files.length }
}

/** Whether the stamp at `stampFile` records `hash` (a missing or malformed stamp is not up to date). */
export function isUpToDate(stampFile, hash) {
  try {
    return JSON.parse(readFileSync(stampFile, 'utf8')).hash === hash
  } catch {
    return false
  }
}

/** Records a successful build of the inputs that hash to `hash`. */
export function writeStamp(stampFile, hash) {
  writeFileSync(stampFile, `${JSON.stringify({ hash, builtAt: new Date().toISOString() })}\n`)
}

/** Forgets the last build: called before a build starts, so a build that fails leaves no stamp. */
export function clearStamp(stampFile) {
  rmSync(stampFile, { force: true })
}

/** The package build's input hash under `root` (demo/dist/ is the demo build's output, not an input). */
export function packageInputsHash(root) {
  return hashInputs(root, BUILD_INPUTS, { skip: ['demo/dist'] }).hash
}

/** The playground build's input hash under `root` (`dev`: unminified, another output). */
export function demoInputsHash(root, dev = false) {
  return hashInputs(root, DEMO_INPUTS, { skip: ['demo/dist'], extra: [dev ? 'dev' : 'minified'] }).hash
}

/** The package.json exports targets under `root` that do not exist (a deleted output is not up to date). */
export function missingExportTargets(root) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const missing = []
  const visit = (target) => {
    if (typeof target === 'string') {
      if (!existsSync(join(root, target))) missing.push(target)
    } else if (target !== null && typeof target === 'object') for (const value of Object.values(target)) visit(value)
  }
  visit(pkg.exports)
  return missing
}

/** Whether `npm run build` has nothing to do under `root`: the stamp matches and every exports target exists. */
export function packageUpToDate(root, hash = packageInputsHash(root)) {
  return isUpToDate(join(root, 'dist/.build-stamp.json'), hash) && missingExportTargets(root).length === 0
}

/** Whether `npm run build:demo` has nothing to do under `root`: the stamp matches and every output exists. */
export function demoUpToDate(root, dev = false, hash = demoInputsHash(root, dev)) {
  const out = join(root, 'demo/dist')
  return isUpToDate(join(out, '.build-stamp.json'), hash) && DEMO_OUTPUTS.every((file) => existsSync(join(out, file)))
}
