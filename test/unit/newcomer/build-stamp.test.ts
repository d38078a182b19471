/**
 * `npm start` builds only what changed: the up-to-date check of scripts/build.mjs and
 * scripts/build-demo.mjs (a hash of every input's path and bytes against a stamp written
 * after a successful build), and that their input lists cover what the builds read.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { BUILD_INPUTS, clearStamp, DEMO_INPUTS, DEMO_OUTPUTS, demoInputsHash, demoUpToDate, hashInputs, isUpToDate, missingExportTargets, packageInputsHash, packageUpToDate, writeStamp } from '../../../scripts/build-stamp.mjs'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function tree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'build-stamp-'))
  dirs.push(dir)
  mkdirSync(join(dir, 'src/nested'), { recursive: true })
  mkdirSync(join(dir, 'src/dist'), { recursive: true })
  writeFileSync(join(dir, 'src/a.ts'), 'export const a = 1\n')
  writeFileSync(join(dir, 'src/nested/b.ts'), 'export const b = 2\n')
  writeFileSync(join(dir, 'src/dist/out.js'), 'built\n')
  writeFileSync(join(dir, 'package.json'), '{}\n')
  return dir
}

const INPUTS = ['src', 'package.json']
const hashOf = (dir: string, extra: unknown[] = []) => hashInputs(dir, INPUTS, { skip: ['src/dist'], extra }).hash

describe('the builds’ up-to-date check', () => {
  it('is up to date only while every input keeps its path and bytes', () => {
    const dir = tree()
    const stamp = join(dir, 'stamp.json')
    const before = hashOf(dir)
    expect(isUpToDate(stamp, before)).toBe(false) // no stamp yet: build
    writeStamp(stamp, before)
    expect(isUpToDate(stamp, hashOf(dir))).toBe(true)

    // A new mtime with the same bytes (a checkout, `touch`) changes nothing.
    utimesSync(join(dir, 'src/a.ts'), new Date(2030, 0, 1), new Date(2030, 0, 1))
    expect(hashOf(dir)).toBe(before)
    // Outputs inside a skipped folder are not inputs.
    writeFileSync(join(dir, 'src/dist/out.js'), 'rebuilt\n')
    expect(hashOf(dir)).toBe(before)

    // An edit, even of one byte and within the same second, is seen.
    writeFileSync(join(dir, 'src/nested/b.ts'), 'export const b = 3\n')
    const edited = hashOf(dir)
    expect(edited).not.toBe(before)
    expect(isUpToDate(stamp, edited)).toBe(false)
    writeFileSync(join(dir, 'src/nested/b.ts'), 'export const b = 2\n')
    expect(hashOf(dir)).toBe(before)

    // An added file, a removed one, a renamed one, a missing input, another option: each builds again.
    writeFileSync(join(dir, 'src/c.ts'), '')
    expect(hashOf(dir)).not.toBe(before)
    rmSync(join(dir, 'src/c.ts'))
    expect(hashOf(dir)).toBe(before)
    rmSync(join(dir, 'src/a.ts'))
    writeFileSync(join(dir, 'src/a2.ts'), 'export const a = 1\n')
    expect(hashOf(dir)).not.toBe(before)
    rmSync(join(dir, 'src/a2.ts'))
    writeFileSync(join(dir, 'src/a.ts'), 'export const a = 1\n')
    expect(hashOf(dir)).toBe(before)
    expect(hashOf(dir, ['dev'])).not.toBe(before)
    rmSync(join(dir, 'package.json'))
    expect(hashOf(dir)).not.toBe(before)
  })

  it('a malformed or cleared stamp is not up to date (a failed build leaves none)', () => {
    const dir = tree()
    const stamp = join(dir, 'stamp.json')
    const hash = hashOf(dir)
    writeFileSync(stamp, '{"hash":')
    expect(isUpToDate(stamp, hash)).toBe(false)
    writeStamp(stamp, hash)
    expect(isUpToDate(stamp, hash)).toBe(true)
    clearStamp(stamp)
    expect(isUpToDate(stamp, hash)).toBe(false)
  })

  it('the package build hashes every folder tsc compiles, and both builds hash the lock file and their own scripts', () => {
    const buildInputs = BUILD_INPUTS
    const include = (JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include
    for (const folder of include) expect(buildInputs).toContain(folder)
    for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/gen-bootstrap.mjs', 'scripts/check-exports.mjs', 'scripts/build-stamp.mjs']) {
      expect(buildInputs).toContain(file)
    }
    const demoInputs = DEMO_INPUTS
    // The bundles' entries live under these folders.
    for (const folder of ['demo', 'src', 'platforms', 'engine', 'package-lock.json', 'scripts/build-demo.mjs']) expect(demoInputs).toContain(folder)
  })

  it('npm start (scripts/start.mjs) asks the same checks: a matching stamp with every output present is up to date; a missing output or exports target is not', () => {
    const dir = tree()
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } } }))
    mkdirSync(join(dir, 'dist'))
    mkdirSync(join(dir, 'demo/dist'), { recursive: true })
    writeFileSync(join(dir, 'dist/index.js'), '')
    expect(missingExportTargets(dir)).toEqual(['./dist/index.d.ts'])
    writeStamp(join(dir, 'dist/.build-stamp.json'), packageInputsHash(dir))
    expect(packageUpToDate(dir)).toBe(false)
    writeFileSync(join(dir, 'dist/index.d.ts'), '')
    expect(packageUpToDate(dir)).toBe(true)
    writeFileSync(join(dir, 'src/a.ts'), 'export const a = 2\n')
    expect(packageUpToDate(dir)).toBe(false)

    for (const file of DEMO_OUTPUTS) writeFileSync(join(dir, 'demo/dist', file), '')
    writeStamp(join(dir, 'demo/dist/.build-stamp.json'), demoInputsHash(dir))
    expect(demoUpToDate(dir)).toBe(true)
    expect(demoUpToDate(dir, true)).toBe(false)
    rmSync(join(dir, 'demo/dist/main.js'))
    expect(demoUpToDate(dir)).toBe(false)
  })

  it('npm start is scripts/start.mjs, which builds only through those checks and then runs the compiled examples/start.ts in its own process', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    expect(pkg.scripts['start']).toBe('node scripts/start.mjs')
    const start = readFileSync(join(root, 'scripts/start.mjs'), 'utf8')
    expect(start).toContain('packageUpToDate(root)')
    expect(start).toContain('demoUpToDate(root)')
    expect(start).toContain("import('../dist/examples/start.js')")
  })
})
