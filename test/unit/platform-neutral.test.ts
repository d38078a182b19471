import { readdirSync, readFileSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * Invariant 1 of DESIGN.md: the core in `src/` imports nothing runtime-specific. This
 * reads every source file's import specifiers (static, dynamic, require, re-exports)
 * and rejects Node built-ins (with or without `node:`), runtime-specific packages and
 * any reach into `platforms/`.
 */
const srcDir = fileURLToPath(new URL('../../src', import.meta.url))

const forbiddenPackages = [
  /^@cloudflare\//,
  /^cloudflare:/,
  /^bun(:|$)/,
  /^deno(:|$)/,
  /^@hono\/node-server/,
  /^ws$/,
  /^quickjs-emscripten/,
  /^@jitl\//,
  /^comlink$/,
  /^esbuild/,
  /^ajv/,
  /^playwright/,
]
const builtins = new Set(builtinModules.flatMap((m) => [m, m.split('/')[0]!]))

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name)
    if (statSync(full).isDirectory()) return sourceFiles(full)
    return /\.(ts|mts|js|mjs)$/.test(name) && !/\.test(-d)?\.ts$/.test(name) ? [full] : []
  })
}

/** Every module specifier a file names. */
export function specifiers(text: string): string[] {
  const found: string[] = []
  const patterns = [
    /\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ]
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1]!)
  return found
}

function violation(specifier: string, file: string): string | undefined {
  if (specifier.startsWith('node:')) return 'a node: built-in'
  if (builtins.has(specifier) || builtins.has(specifier.split('/')[0]!)) return 'a Node built-in'
  if (forbiddenPackages.some((p) => p.test(specifier))) return 'a runtime-specific package'
  if (specifier.startsWith('.') && relative(srcDir, join(file, '..', specifier)).startsWith('..')) {
    return 'a module outside src/'
  }
  return undefined
}

describe('src/ is platform-neutral', () => {
  const files = sourceFiles(srcDir)

  it('finds the core sources', () => {
    expect(files.length).toBeGreaterThan(3)
  })

  it('imports no Node built-in, runtime-specific package or platform module', () => {
    const problems = files.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8')).flatMap((s) => {
        const why = violation(s, file)
        return why ? [`${relative(srcDir, file)} imports ${s} (${why})`] : []
      }),
    )
    expect(problems).toEqual([])
  })

  it('the checker itself catches each forbidden form', () => {
    const sample = [
      "import fs from 'node:fs'",
      "import { Worker } from 'worker_threads'",
      "const m = await import('path')",
      "const c = require('child_process')",
      "export { x } from 'comlink'",
      "import '../platforms/node/index.js'",
    ].join('\n')
    const found = specifiers(sample).filter((s) => violation(s, join(srcDir, 'x.ts')))
    expect(found.sort()).toEqual(
      ['../platforms/node/index.js', 'child_process', 'comlink', 'node:fs', 'path', 'worker_threads'],
    )
  })

  it('the core uses no process, Buffer, Deno, Bun or __dirname globals', () => {
    const problems = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '')
      return [/\bprocess\./, /\bBuffer\./, /\bDeno\./, /\bBun\./, /\b__dirname\b/, /\brequire\(/]
        .filter((p) => p.test(text))
        .map((p) => `${relative(srcDir, file)} uses ${p.source}`)
    })
    expect(problems).toEqual([])
  })
})
