/**
 * Where the Deno and Bun binaries are: their npm packages ship them as optional platform
 * packages (`@deno/linux-x64-glibc`, `@oven/bun-linux-x64`, …), and package.json denies
 * their postinstall scripts (Bun's may download), so nothing is linked into node_modules/.bin
 * for Bun: the binary is taken from the platform package, or from where a postinstall put it.
 * @module
 */
import { existsSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)

/** A real executable (a placeholder script is a few hundred bytes). */
const isBinary = (path: string): boolean => existsSync(path) && statSync(path).size > 1_000_000

function packageDir(name: string): string | undefined {
  try {
    return dirname(require.resolve(`${name}/package.json`))
  } catch {
    return undefined
  }
}

/** The Deno binary: the `deno` package's own resolution (install_api.cjs), which needs no postinstall. */
export function denoBinary(): string {
  return (require('deno/install_api.cjs') as { runInstall(): string }).runInstall()
}

/** The Bun binary: the platform package's, or `bun/bin/bun.exe` once a postinstall replaced the placeholder there. */
export function bunBinary(): string {
  const arch = process.arch === 'arm64' ? 'aarch64' : process.arch
  const candidates = [`@oven/bun-${process.platform}-${arch}`, `@oven/bun-${process.platform}-${arch}-baseline`]
    .map((name) => packageDir(name))
    .filter((dir): dir is string => dir !== undefined)
    .map((dir) => join(dir, 'bin', process.platform === 'win32' ? 'bun.exe' : 'bun'))
  const bunPackage = packageDir('bun')
  if (bunPackage !== undefined) candidates.push(join(bunPackage, 'bin', 'bun.exe'))
  const found = candidates.find(isBinary)
  if (found === undefined) throw new Error(`no Bun binary among ${candidates.join(', ') || 'nothing: the bun package is not installed'} (npm ci installs it)`)
  return found
}
