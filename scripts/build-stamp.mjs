// The up-to-date check of the builds (`npm run build`, `npm run build:demo`): a hash of
// every input's path and bytes, kept as a stamp next to the outputs once a build has
// succeeded. A build whose stamp matches its inputs' hash has nothing to do; anything
// else (an edited, added or removed input, a different dependency lock, a missing or
// unreadable stamp) builds again. Content, not mtimes: a checkout or `touch` that leaves
// the bytes alone costs nothing, and an edit within the same second is still seen.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'

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
