import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StartedServer } from '../../examples/start.js'
import { launchChromium, startPlayground } from '../support/playground-e2e.js'

/**
 * The playground's language switch end to end, in real Chromium against the `npm start`
 * server: Python examples run in the tab (MicroPython in Web Workers, its wasm served from
 * demo/dist/) and on the server (`POST /v1/runs` with `"language": "python"`).
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const shots = join(root, 'test-results/screenshots')

let browser: Browser
let server: StartedServer
let page: Page
const problems: string[] = []

async function pickExample(title: string): Promise<void> {
  const value = await page.locator('[data-testid="examples"] option', { hasText: title }).first().getAttribute('value')
  expect(value, `example "${title}"`).not.toBeNull()
  await page.selectOption('[data-testid="examples"]', value!)
}

async function runAndSettle(): Promise<string> {
  await page.click('[data-testid="run"]')
  await page.waitForFunction(() => {
    const state = document.querySelector<HTMLElement>('[data-testid="status"]')?.dataset.state
    return state === 'ok' || state === 'failed' || state === 'denied'
  }, undefined, { timeout: 60_000 })
  return (await page.getAttribute('[data-testid="status"]', 'data-state')) ?? ''
}

beforeAll(async () => {
  mkdirSync(shots, { recursive: true })
  server = await startPlayground({ token: 'e2e-token-python-0123456789' })
  browser = await launchChromium()
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } })
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
  })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  await page.goto(server.url)
  await page.waitForSelector('html[data-ready="true"]')
  await page.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
})

afterAll(async () => {
  await browser?.close()
  await server?.shutdown()
})

describe('the playground language switch', () => {
  it('switches to Python: the editor gets the Python examples and the SDK tab shows Python', async () => {
    await page.selectOption('[data-testid="language"]', 'python')
    expect(await page.locator('[data-testid="examples"] option').first().textContent()).toBe('Parallel reads, then an exclusive write')
    expect(await page.textContent('.cm-content')).toContain('asyncio.gather')
    expect(problems).toEqual([])
  })

  it('runs a Python example in the tab (MicroPython in a Web Worker)', async () => {
    await pickExample('Shop: top gold customers')
    expect(await runAndSettle()).toBe('ok')
    expect(await page.textContent('[data-testid="console"]')).toMatch(/\$\d+\.\d\d/)
    expect(await page.textContent('[data-testid="result"]')).toContain('"cents"')
    expect(await page.locator('[data-testid="timeline-bar"]').count()).toBeGreaterThan(3)
    await page.screenshot({ path: join(shots, '40-python-tab.png'), fullPage: true })
    await pickExample('A failed call')
    expect(await runAndSettle()).toBe('ok')
    expect(await page.textContent('[data-testid="console"]')).toContain('caught: read_file')
    expect(problems).toEqual([])
  })

  it('runs the same Python example on the server (POST /v1/runs with language python)', async () => {
    await page.click('[data-where="server"]')
    await pickExample('Hello (no tools)')
    expect(await runAndSettle()).toBe('ok')
    expect(await page.textContent('[data-testid="result"]')).toContain('14')
    // MicroPython's dicts keep no insertion order: the keys may print either way round.
    expect(await page.textContent('[data-testid="console"]')).toMatch(/points: \[\{'[xy]': \d, '[xy]': \d\}/)
    await page.screenshot({ path: join(shots, '41-python-server.png'), fullPage: true })
    await page.click('[data-where="tab"]')
    expect(problems).toEqual([])
  })

  it('stops a Python hot loop with Abort, then runs TypeScript again after switching back', async () => {
    await pickExample('Hot loop (press Abort)')
    await page.click('[data-testid="run"]')
    await page.waitForFunction(() => document.querySelector('[data-testid="console"]')?.textContent?.includes('spinning') === true, undefined, { timeout: 30_000 })
    await page.click('[data-testid="abort"]')
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="status"]')?.dataset.state === 'failed', undefined, { timeout: 30_000 })
    expect(await page.textContent('[data-testid="status"]')).toContain('abort')
    await page.selectOption('[data-testid="language"]', 'typescript')
    await pickExample('Hello (no tools)')
    expect(await runAndSettle()).toBe('ok')
    expect(await page.textContent('[data-testid="result"]')).toContain('14')
    expect(problems).toEqual([])
  })
})
