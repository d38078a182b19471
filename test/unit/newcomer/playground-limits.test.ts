/**
 * The playground's Compute and Wall fields show the budgets runs really get: `npm start`
 * injects its sandbox's limits into the page (`<meta name="toolyard-limits">`), and the
 * page's own defaults are the sandbox's (demo/playground/main.ts, index.html).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startServer } from '../../../examples/start.js'
import { SANDBOX_DEFAULT_LIMITS } from '../../../src/code-runtime/sandbox-runtime.js'

const TOKEN = 'playground-limits-0123456789abcdef'

describe('the playground budgets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-limits-'))
  writeFileSync(join(dir, 'index.html'), '<!doctype html><html><head><title>pg</title></head><body></body></html>')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('npm start tells the page its budgets: the sandbox defaults, 5 s compute and 60 s wall', async () => {
    const server = await startServer({ port: 0, token: TOKEN, staticDir: dir })
    try {
      const html = await (await fetch(`${server.url}/`)).text()
      const content = /<meta name="toolyard-limits" content="([^"]*)" \/>/.exec(html)?.[1]
      expect(JSON.parse((content ?? 'null').replaceAll('&#34;', '"'))).toEqual({ computeMs: 5_000, maxWallMs: 60_000 })
      expect(server.codeRuntime.limits).toMatchObject({ computeMs: 5_000, maxWallMs: 60_000 })
      expect(html.indexOf('toolyard-limits')).toBeLessThan(html.indexOf('</head>'))
    } finally {
      await server.shutdown()
    }
  })

  it('the page starts from the same defaults, and shows the platform\'s run shortcut', () => {
    expect(SANDBOX_DEFAULT_LIMITS).toMatchObject({ computeMs: 5_000, maxWallMs: 60_000 })
    const html = readFileSync(fileURLToPath(new URL('../../../demo/playground/index.html', import.meta.url)), 'utf8')
    expect(html).toMatch(/id="budget-compute"[^>]*value="5000"/)
    expect(html).toMatch(/id="budget-wall"[^>]*value="60000"/)
    expect(html).not.toContain('⌘')
    const main = readFileSync(fileURLToPath(new URL('../../../demo/playground/main.ts', import.meta.url)), 'utf8')
    expect(main).toContain('SANDBOX_DEFAULT_LIMITS')
    expect(main).not.toMatch(/2_000\)|10_000\)/)
  })
})
