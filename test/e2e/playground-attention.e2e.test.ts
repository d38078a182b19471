import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StartedServer } from '../../examples/start.js'
import { launchChromium, startPlayground } from '../support/playground-e2e.js'

/**
 * A waiting approval you cannot miss (issue 35, item 1) and a card that shows the effect
 * (issue 31, item 6), in real Chromium at 1440×900 against the `npm start` server
 * (examples/start.ts, in-process): while a write waits, the status line says what waits
 * and for whom, the tab title counts it, a pinned bar names it with a link, its card has
 * scrolled into view and shows "overwrites README.md" with the diff; in server mode the
 * "Waiting for you" panel counts the page's own request. Also: an invalid call's card is
 * not tagged with a concurrency class, and timeline axis labels stay on one line.
 * Screenshots go to test-results/screenshots/ (30-…, 31-…).
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const shots = join(root, 'test-results/screenshots')
const TOKEN = 'e2e-attention-0123456789abcdef'
const TITLE = 'toolyard playground'
const PENDING = '[data-testid="cards"] [data-testid="approval"][data-state="pending"]'

let browser: Browser
let server: StartedServer
const problems: string[] = []

function watch(target: Page): void {
  target.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
  })
  target.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
}

async function open(where: 'tab' | 'server'): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } })
  watch(page)
  await page.goto(server.url)
  await page.waitForSelector('html[data-ready="true"]')
  await page.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
  if (where === 'server') {
    await page.click('[data-where="server"]')
    await page.waitForSelector('[data-testid="waiting-panel"]:not([hidden])')
  }
  return page
}

async function typeProgram(page: Page, code: string): Promise<void> {
  await page.click('.cm-content')
  await page.keyboard.press('Control+A')
  await page.keyboard.insertText(code)
}

async function settled(page: Page): Promise<string> {
  await page.waitForFunction(() => ['ok', 'failed', 'denied'].includes(document.querySelector<HTMLElement>('[data-testid="status"]')?.dataset.state ?? ''), undefined, { timeout: 60_000 })
  return (await page.getAttribute('[data-testid="status"]', 'data-state')) ?? ''
}

/** Reads a few files, then overwrites README.md: the write asks. */
const OVERWRITE = [
  "const files = await tools.list_files({})",
  "await tools.read_file({ path: 'package.json' })",
  "await tools.write_file({ path: 'README.md', content: '# acme-notes\\n\\nRewritten.\\n' })",
  "return files.files.length",
].join('\n')

/** Whether the element's box lies inside the 900-pixel-high viewport. */
async function inViewport(page: Page, selector: string): Promise<boolean> {
  return page.$eval(selector, (element) => {
    const box = element.getBoundingClientRect()
    return box.top >= 0 && box.bottom <= window.innerHeight
  })
}

beforeAll(async () => {
  mkdirSync(shots, { recursive: true })
  server = await startPlayground({ token: TOKEN })
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  await server?.shutdown()
})

describe('a waiting approval cannot be missed', () => {
  it('in the tab: status, title, pinned bar and the card in view say what waits; the card shows the overwrite diff; all clear after Allow', async () => {
    const page = await open('tab')
    await typeProgram(page, OVERWRITE)
    await page.click('[data-testid="run"]')
    await page.waitForSelector(PENDING, { timeout: 30_000 })
    await page.waitForSelector('[data-testid="status"][data-state="waiting"]')
    expect(await page.textContent('[data-testid="status"]')).toBe('Waiting for your approval in this tab: write_file README.md — Allow or Deny on its card below')
    await page.waitForFunction((title) => document.title === `(1) ${title}`, TITLE)
    await page.waitForSelector('[data-testid="attention"]:not([hidden])')
    expect(await page.textContent('[data-testid="attention-subject"]')).toBe('write_file README.md')
    // The card came into view by itself (it sits below the fold of a 1440×900 window otherwise).
    await expect.poll(() => inViewport(page, PENDING), { timeout: 5_000 }).toBe(true)
    const preview = (await page.textContent(`${PENDING} [data-testid="approval-preview"]`)) ?? ''
    expect(preview).toMatch(/^overwrites README\.md: \d+ lines → 3 lines \(\d+ removed, 1 added\)\n--- a\/README\.md\n\+\+\+ b\/README\.md\n@@ /)
    expect(preview).toContain('-A tiny notes service: create, list, tag and search notes.')
    expect(preview).toContain('+Rewritten.')
    expect(preview).not.toContain('new file')
    // The call's own diff view shows the text to be written, and no longer calls it a new file (issue 31).
    const card = page.locator('[data-testid="card"]', { has: page.locator('[data-testid="approval"][data-state="pending"]') })
    expect(await card.textContent()).toContain('README.md (the whole new content)')
    expect(await card.textContent()).not.toContain('(new file)')
    await page.screenshot({ path: join(shots, '30-approval-waiting-tab.png') })

    await page.click(`${PENDING} [data-testid="approve"]`)
    expect(await settled(page)).toBe('ok')
    await page.waitForFunction((title) => document.title === title, TITLE)
    expect(await page.isHidden('[data-testid="attention"]')).toBe(true)
    expect(await page.textContent('[data-testid="status"]')).toContain('completed in this tab')
    expect(problems).toEqual([])
    await page.close()
  })

  it('a new file reads as one; the pinned bar jumps back to the card after the person scrolled away', async () => {
    const page = await open('tab')
    await typeProgram(page, "await tools.write_file({ path: 'notes/new.md', content: 'one\\ntwo\\n' })\nreturn 1")
    await page.click('[data-testid="run"]')
    await page.waitForSelector(PENDING, { timeout: 30_000 })
    expect(await page.textContent(`${PENDING} [data-testid="approval-preview"]`)).toBe('new file notes/new.md (2 lines)\n--- /dev/null\n+++ b/notes/new.md\n@@ -0,0 +1,2 @@\n+one\n+two')
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.click('[data-testid="attention-show"]')
    await expect.poll(() => inViewport(page, PENDING), { timeout: 5_000 }).toBe(true)
    await page.click(`${PENDING} [data-testid="deny"]`)
    expect(await settled(page)).not.toBe('')
    await page.waitForFunction((title) => document.title === title, TITLE)
    expect(problems).toEqual([])
    await page.close()
  })

  it('on the server: the waiting panel counts the page\'s own request and links to its card; title and status agree', async () => {
    const page = await open('server')
    await typeProgram(page, OVERWRITE)
    await page.click('[data-testid="run"]')
    await page.waitForSelector(PENDING, { timeout: 30_000 })
    await page.waitForSelector('[data-testid="status"][data-state="waiting"]')
    expect(await page.textContent('[data-testid="status"]')).toBe('Waiting for your approval on the server: write_file README.md — Allow or Deny on its card below')
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="waiting-panel"]')?.dataset.count === '1', undefined, { timeout: 10_000 })
    expect(await page.textContent('[data-testid="waiting-count"]')).toBe('(1)')
    expect(await page.textContent('[data-testid="waiting-note"]')).not.toContain('Nothing on the server waits for you')
    expect(await page.textContent('[data-testid="waiting-own"]')).toContain('write_file README.md')
    // One request, one set of buttons: the panel names it, the card has Allow / Deny.
    expect(await page.locator('[data-testid="waiting-panel"] [data-testid="approve"]').count()).toBe(0)
    expect(await page.title()).toBe(`(1) ${TITLE}`)
    expect(await page.textContent(`${PENDING} [data-testid="approval-preview"]`)).toMatch(/^overwrites README\.md: /)
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: join(shots, '31-approval-waiting-server-top.png') })
    await page.click('[data-testid="waiting-own-show"]')
    await expect.poll(() => inViewport(page, PENDING), { timeout: 5_000 }).toBe(true)
    await page.click(`${PENDING} [data-testid="deny"]`)
    // The program does not catch the denial: the run fails, and nothing waits any more.
    expect(await settled(page)).toBe('failed')
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="waiting-panel"]')?.dataset.count === '0', undefined, { timeout: 10_000 })
    expect(await page.textContent('[data-testid="waiting-note"]')).toBe('Nothing on the server waits for you.')
    expect(await page.title()).toBe(TITLE)
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('cards and timeline', () => {
  it('the card of an invalid read_file call says "invalid arguments", not a concurrency class; axis labels stay on one line', async () => {
    const page = await open('tab')
    await typeProgram(
      page,
      [
        "const bad = await tools.read_file({ path: 42 }).catch((e) => String(e.code ?? e.message))",
        "const good = await Promise.all([tools.read_file({ path: 'README.md' }), tools.list_files({})])",
        'await new Promise((resolve) => setTimeout(resolve, 300))',
        "await tools.read_file({ path: 'package.json' })",
        'return bad',
      ].join('\n'),
    )
    await page.click('[data-testid="run"]')
    expect(await settled(page)).toBe('ok')
    expect(await page.textContent('[data-testid="result"]')).toMatch(/INVALID_ARGS|Invalid arguments/)
    const badges = await page.$$eval('[data-testid="card"]', (cards) => cards.map((card) => card.querySelector('[data-testid="card-mode"]')?.textContent))
    expect(badges[0]).toBe('invalid arguments')
    expect(badges.slice(1)).toEqual(['parallel', 'parallel', 'parallel'])
    const labels = await page.$$eval('[data-testid="timeline"] .axis span', (spans) => {
      const box = document.querySelector('[data-testid="timeline"]')!.getBoundingClientRect()
      return spans.map((span) => {
        const own = span.getBoundingClientRect()
        return { text: span.textContent, height: own.height, line: parseFloat(getComputedStyle(span).fontSize) * 1.6, inside: own.left >= box.left && own.right <= box.right }
      })
    })
    expect(labels.length).toBeGreaterThan(2)
    for (const label of labels) {
      expect(label.height, `"${label.text}" wraps`).toBeLessThan(label.line)
      expect(label.inside, `"${label.text}" is cut by the timeline's edge`).toBe(true)
    }
    expect(problems).toEqual([])
    await page.close()
  })
})
