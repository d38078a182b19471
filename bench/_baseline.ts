/**
 * A bench's baseline built from source: a module's text (from a git ref, or this checkout's
 * with a function swapped for its pre-fix shape) written under node_modules/.cache with its
 * relative imports pointed at this checkout, then imported beside the current module.
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

/** `path`'s text (repository-relative) at git `ref`, or in this checkout when `ref` is undefined. */
export function sourceAt(path: string, ref?: string): string {
  if (ref === undefined) return readFileSync(new URL(`../${path}`, import.meta.url), 'utf8')
  return execFileSync('git', ['show', `${ref}:${path}`], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
}

/**
 * `source` with `name`'s top-level function (from `function name(` to the first line that is
 * just `}`) replaced by `replacement`; throws when the function is not there, so a baseline
 * never silently measures the current code.
 */
export function swapFunction(source: string, name: string, replacement: string): string {
  const start = source.search(new RegExp(`^(?:export )?(?:async )?function ${name}\\(`, 'm'))
  const end = start < 0 ? -1 : source.indexOf('\n}\n', start)
  if (end < 0) throw new Error(`bench baseline: function ${name} not found`)
  return source.slice(0, start) + replacement + source.slice(end + 2)
}

/** Imports `source` as if it were `path` (repository-relative), as a module of its own named `tag`. */
export async function importAs<T>(path: string, source: string, tag: string): Promise<T> {
  const dir = new URL(`../${path}`, import.meta.url)
  const here = fileURLToPath(new URL('.', dir))
  const up = fileURLToPath(new URL('..', dir))
  const text = source.replaceAll(/from '\.\/([^']+)'/g, `from '${here}$1'`).replaceAll(/from '\.\.\/([^']+)'/g, `from '${up}$1'`)
  const out = new URL(`../node_modules/.cache/toolyard-bench/${tag.replaceAll(/[^\w.-]/g, '_')}/`, import.meta.url)
  mkdirSync(out, { recursive: true })
  const file = new URL(path.split('/').pop()!, out)
  writeFileSync(file, text)
  return (await import(file.href)) as T
}
