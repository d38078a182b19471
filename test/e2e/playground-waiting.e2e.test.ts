import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StartedServer } from '../../examples/start.js'
import { launchChromium, PLAYGROUND_DIST, startPlayground } from '../support/playground-e2e.js'
import { until } from '../support/poll.js'

/**
 * The playground's "Waiting for you" panel (issue 21, item 6), in real Chromium against
 * the `npm start` server on a data directory (examples/start.ts, in-process): a run
 * started from the page that waits for a person is still listed after a reload — and
 * after the server process was killed (SIGKILL) and another started on the same directory
 * and port — and Allow in the panel finishes it (the file is written, the run ends `done`
 * with its value). Screenshots go to
 * test-results/screenshots/ (15-…, 16-…, 17-…).
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const shots = join(root, 'test-results/screenshots')
const TOKEN = 'e2e-waiting-0123456789abcdef'

let browser: Browser
const base = mkdtempSync(join(tmpdir(), 'toolyard-waiting-'))
const servers: StartedServer[] = []
const children: ChildProcess[] = []

/** A port free now, for a server that must come back on the same one. */
async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

/** The server in a child process (test/e2e/waiting-server-child.ts), so it can die with SIGKILL. */
async function startChild(dataDir: string, port: number): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/e2e/waiting-server-child.ts', dataDir, TOKEN, String(port), PLAYGROUND_DIST], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const line = await until(
    () => {
      // A child that exited will never print its url: fail at once.
      if (child.exitCode !== null) throw new Error(`the server child did not start: ${err.slice(-600)}`)
      return out.split('\n').find((l) => l.startsWith('{"url"'))
    },
    () => `the server child to start: ${err.slice(-600)}`,
    90_000,
    50,
  )
  return { url: (JSON.parse(line) as { url: string }).url, child }
}

async function start(dataDir: string, port = 0): Promise<StartedServer> {
  // The same port after a restart keeps the page's origin (and what it remembered in localStorage).
  let last: unknown
  return until(
    async () => {
      try {
        const server = await startPlayground({ port, token: TOKEN, dataDir, resumeStaleMs: 1_000, resumeEveryMs: 250 })
        servers.push(server)
        return server
      } catch (error) {
        if (!/EADDRINUSE/.test(String(error))) throw error
        last = error
        return undefined
      }
    },
    () => `port ${port} to be free: ${String(last)}`,
    20_000,
    250,
  )
}

function watch(target: Page, into: string[]): void {
  target.on('console', (message) => {
    // A server that is down (restarting) makes the page's requests fail: that is the scenario, not a fault.
    if (message.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(message.text())) into.push(`console error: ${message.text()}`)
  })
  target.on('pageerror', (error) => into.push(`page error: ${error.message}`))
}

async function shot(target: Page, name: string): Promise<void> {
  await target.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
}

async function typeProgram(target: Page, code: string): Promise<void> {
  await target.click('.cm-content')
  await target.keyboard.press('Control+A')
  await target.keyboard.insertText(code)
}

const program = (path: string): string =>
  [`await tools.write_file({ path: '${path}', content: '# waited for a person\\n' })`, `return 'written ${path}'`].join('\n')

const CARD_PENDING = '[data-testid="cards"] [data-testid="approval"][data-state="pending"]'
const ITEM = '[data-testid="waiting-panel"] [data-testid="waiting-item"]'
/** The file store's name for a parked run's record (`runs/<run>`, its key in hex). */
const PARKED_RUN = Buffer.from('runs/').toString('hex')

/** Opens the page on the server, runs `code` there and waits until its write asks (on the run's own card). */
async function runUntilItAsks(target: Page, url: string, code: string): Promise<void> {
  await target.goto(url)
  await target.waitForSelector('html[data-ready="true"]')
  await target.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
  expect(await target.isHidden('[data-testid="waiting-panel"]')).toBe(true)
  await target.click('[data-where="server"]')
  await target.waitForSelector('[data-testid="waiting-panel"]:not([hidden])')
  await typeProgram(target, code)
  await target.click('[data-testid="run"]')
  await target.waitForSelector(CARD_PENDING, { timeout: 30_000 })
}

/** After a reload the page comes back on the server (the tab's session remembers) and lists what waits. */
async function reloadAndFind(target: Page, path: string): Promise<string> {
  await target.reload()
  await target.waitForSelector('html[data-ready="true"]')
  await target.waitForSelector('[data-where="server"][aria-checked="true"]', { timeout: 15_000 })
  const item = `${ITEM}:has-text("${path}")`
  await target.waitForSelector(item, { timeout: 30_000 })
  return item
}

async function readFile(url: string, path: string): Promise<string> {
  const response = await fetch(`${url}/v1/tools/read_file/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ arguments: { path } }),
  })
  return JSON.stringify(await response.json())
}

beforeAll(async () => {
  mkdirSync(shots, { recursive: true })
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  for (const child of children) child.kill('SIGKILL')
  for (const server of servers) await server.shutdown()
  rmSync(base, { recursive: true, force: true })
})

describe('the "Waiting for you" panel', () => {
  it('after a reload lists the run the page started; Allow writes the file, the request leaves the panel and the run ends done', async () => {
    const server = await start(join(base, 'reload'))
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } })
    const problems: string[] = []
    watch(page, problems)
    const path = 'notes/after-reload.md'
    await runUntilItAsks(page, server.url, program(path))
    // The page's own running call has its buttons on its card only, not twice; the panel counts and names it (issue 35).
    await page.waitForTimeout(2_500)
    expect(await page.locator(ITEM).count()).toBe(0)
    expect(await page.getAttribute('[data-testid="waiting-panel"]', 'data-count')).toBe('1')
    expect(await page.textContent('[data-testid="waiting-own"]')).toContain(`write_file ${path}`)

    const item = await reloadAndFind(page, path)
    const text = (await page.textContent(item)) ?? ''
    expect(text).toContain('write_file')
    expect(text).toContain('changes the workspace')
    expect(text).toMatch(/expires in \d+ s/)
    expect(text).toContain('started from this page')
    // Nothing of the old page's run is on it any more: only the panel knows it.
    expect(await page.locator('[data-testid="cards"] [data-testid="card"]').count()).toBe(0)
    await shot(page, '15-waiting-after-reload')

    await page.click(`${item} [data-testid="approve"]`)
    await page.waitForSelector('[data-testid="waiting-run-status"][data-status="done"]', { timeout: 30_000 })
    expect(await page.textContent('[data-testid="waiting-run-result"]')).toContain(`written ${path}`)
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="waiting-item"]').length === 0)
    expect(await readFile(server.url, path)).toContain('# waited for a person')
    await shot(page, '16-waiting-decided')
    expect(problems).toEqual([])
    await page.close()
  })

  it('shows at most 50 requests and counts the rest; server text stays text; requests from other clients say the run continues on the server', async () => {
    const server = await start(join(base, 'bound'))
    // 53 writes from another client (native calls held open until decided), one of them with markup in its path.
    const calls = Array.from({ length: 53 }, (_, i) =>
      fetch(`${server.url}/v1/tools/write_file/execute`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ arguments: { path: i === 0 ? 'notes/<img src=x onerror="window.pwned=1">.md' : `notes/other-${i}.md`, content: `${i}\n` }, callId: `other-client-${i}` }),
      }).catch(() => undefined),
    )
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } })
    const problems: string[] = []
    watch(page, problems)
    await page.goto(server.url)
    await page.waitForSelector('html[data-ready="true"]')
    await page.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
    await page.click('[data-where="server"]')
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="waiting-panel"]')?.dataset.count === '53', undefined, { timeout: 30_000 })
    expect(await page.locator(ITEM).count()).toBe(50)
    expect(await page.textContent('[data-testid="waiting-more"]')).toContain('and 3 more waiting')
    expect(await page.textContent('[data-testid="waiting-count"]')).toBe('(53)')
    // The markup arrived as text and made no element.
    const first = page.locator(ITEM, { hasText: '<img src=x' })
    expect(await first.textContent()).toContain('<img src=x onerror=')
    expect(await page.locator('[data-testid="waiting-panel"] img').count()).toBe(0)
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined()
    // A client's call id lives in its principal's namespace on the server (issue 31): `client.<principal>.<id>`.
    expect(await first.textContent()).toMatch(/call client\.[^ ]+\.other-client-0/)
    await shot(page, '18-waiting-bounded')
    // Not a run this page started: after the decision the panel can only say it goes on.
    await first.locator('[data-testid="deny"]').click()
    await page.waitForSelector('[data-testid="waiting-decided-item"][data-decision="deny"]')
    expect(await page.textContent('[data-testid="waiting-decided-item"] [data-testid="waiting-run-status"]')).toBe('decided; the run continues on the server')
    await page.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="waiting-panel"]')?.dataset.count === '52', undefined, { timeout: 30_000 })
    expect(await page.textContent('[data-testid="waiting-more"]')).toContain('and 2 more waiting')
    // In the tab the panel is hidden (the tab's own broker dies with the tab).
    await page.click('[data-where="tab"]')
    expect(await page.isHidden('[data-testid="waiting-panel"]')).toBe(true)
    expect(problems).toEqual([])
    await page.close()
    for (const approval of await server.approvals.pending()) await server.approvals.decide(approval.id, { decision: 'deny' })
    await Promise.all(calls)
  })

  it('Abort of a server run cancels it on the server (DELETE /v1/runs/:id): its request is withdrawn', async () => {
    const server = await start(join(base, 'abort'))
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } })
    const problems: string[] = []
    watch(page, problems)
    await runUntilItAsks(page, server.url, program('notes/aborted.md'))
    expect(await server.approvals.pending()).toHaveLength(1)
    await page.click('[data-testid="abort"]')
    await page.waitForSelector('[data-testid="status"][data-state="failed"]', { timeout: 30_000 })
    expect(await page.textContent('[data-testid="failure-kind"]')).toBe('abort')
    await expect.poll(async () => (await server.approvals.pending()).length, { timeout: 15_000 }).toBe(0)
    expect(await readFile(server.url, 'notes/aborted.md')).not.toContain('# waited for a person')
    expect(problems).toEqual([])
    await page.close()
  })

  it('after the server was killed and another started on the same data directory, still lists the parked run; Allow finishes it on the new server', async () => {
    // Killed, not shut down: a graceful shutdown of npm start aborts its /v1/runs runs
    // through the app's shutdown signal, which withdraws even a parked run's request.
    const dataDir = join(base, 'restart')
    const port = await freePort()
    const first = await startChild(dataDir, port)
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } })
    const problems: string[] = []
    watch(page, problems)
    const path = 'notes/after-restart.md'
    await runUntilItAsks(page, first.url, program(path))
    // Past a second of waiting the run parks (its journal in the store, `runs/<run>`), so the next process can resume it.
    // One record per run: it is there from the start; parked once it holds `park`.
    await until(() => readdirSync(dataDir).some((name) => name.startsWith(PARKED_RUN) && name.endsWith('.v') && readFileSync(join(dataDir, name), 'utf8').includes('"park":')), 'the run parked in the data directory', 30_000)
    first.child.kill('SIGKILL')
    await new Promise((resolve) => first.child.once('exit', resolve))

    const second = await start(dataDir, port)
    expect(second.url).toBe(first.url)
    const item = await reloadAndFind(page, path)
    expect(await page.textContent(item)).toContain('started from this page')
    await shot(page, '17-waiting-after-restart')
    await page.click(`${item} [data-testid="approve"]`)
    await page.waitForSelector('[data-testid="waiting-run-status"][data-status="done"]', { timeout: 60_000 })
    expect(await page.textContent('[data-testid="waiting-run-result"]')).toContain(`written ${path}`)
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="waiting-item"]').length === 0)
    expect(await readFile(second.url, path)).toContain('# waited for a person')
    expect(await second.approvals.pending()).toHaveLength(0)
    expect(problems).toEqual([])
    await page.close()
  })
})
