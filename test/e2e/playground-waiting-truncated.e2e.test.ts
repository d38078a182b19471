import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StartedServer } from '../../examples/start.js'
import { launchChromium, startPlayground } from '../support/playground-e2e.js'

/**
 * The playground's "Waiting for you" panel says when the server listed fewer requests than
 * wait (brief s54 "listing", item 6): `GET /v1/approvals` answers `truncated: true` past its
 * bounds (the oldest 500), and before, the panel showed "(500)" as if that were all. Real
 * Chromium against the `npm start` server (examples/start.ts, in-process, memory store);
 * 501 requests opened through the server's own broker. Screenshot:
 * test-results/screenshots/19-waiting-truncated.png.
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const shots = join(root, 'test-results/screenshots')
const TOKEN = 'e2e-truncated-0123456789abcdef'

let browser: Browser
let server: StartedServer

beforeAll(async () => {
  mkdirSync(shots, { recursive: true })
  server = await startPlayground({ token: TOKEN })
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  await server?.shutdown()
})

describe('the "Waiting for you" panel past the server\'s listing bound', () => {
  it('501 requests wait: the panel says more wait than the server listed, and stops saying so once it lists them all', async () => {
    const controller = new AbortController()
    const opened = new Promise<void>((resolve) => {
      let left = 501
      const stop = server.approvals.subscribe((event) => {
        if (event.type === 'requested' && --left === 0) {
          stop()
          resolve()
        }
      })
    })
    for (let i = 0; i < 501; i++) {
      const execution = { callId: `truncated-${i}`, name: 'write_file', arguments: { path: `notes/${i}.md`, content: `${i}\n` }, signal: controller.signal }
      Promise.resolve(server.approvals.handler({ execution } as never)).catch(() => undefined)
    }
    await opened
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } })
    const problems: string[] = []
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
    await page.goto(server.url)
    await page.waitForSelector('html[data-ready="true"]')
    await page.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
    await page.click('[data-where="server"]')
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="waiting-panel"]')?.dataset.count === '500', undefined, { timeout: 30_000 })
    // Before: "(500)" and no word of the request the server did not list.
    expect(await page.isVisible('[data-testid="waiting-truncated"]')).toBe(true)
    expect(await page.textContent('[data-testid="waiting-truncated"]')).toContain('More requests wait on the server than it listed')
    expect(await page.textContent('[data-testid="waiting-count"]')).toBe('(500+)')
    await page.screenshot({ path: join(shots, '19-waiting-truncated.png'), fullPage: true })
    // One decided: the listing is whole again, and the line goes.
    const [oldest] = await server.approvals.pending()
    expect((await server.approvals.decide(oldest!.id, { decision: 'deny' })).ok).toBe(true)
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="waiting-truncated"]')?.hidden === true, undefined, { timeout: 30_000 })
    expect(await page.textContent('[data-testid="waiting-count"]')).toBe('(500)')
    expect(problems).toEqual([])
    await page.close()
    controller.abort()
  })
})
