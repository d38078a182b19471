import { mkdirSync } from 'node:fs'
import type { Server } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StartedServer } from '../../examples/start.js'
import { launchChromium, startPlayground } from '../support/playground-e2e.js'
import { serveDir } from '../support/static-dir.js'
import { until } from '../support/poll.js'

/**
 * The playground end to end, in real Chromium: built with scripts/build-demo.mjs (build-demo.setup.ts), served
 * by the same server `npm start` runs (examples/start.ts, started in-process on a free
 * port), then once more from a plain static server with no API behind it. Screenshots go
 * to test-results/screenshots/. The demo's writing tools ask for approval, so runs that
 * write are answered with the page's Allow / Deny buttons (and one is left to expire).
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const shots = join(root, 'test-results/screenshots')
let browser: Browser
let server: StartedServer
let page: Page
const problems: string[] = []

function watch(target: Page, into: string[]): void {
  target.on('console', (message) => {
    if (message.type() === 'error') into.push(`console error: ${message.text()}`)
  })
  target.on('pageerror', (error) => into.push(`page error: ${error.message}`))
}

async function shot(target: Page, name: string): Promise<void> {
  await target.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
}

async function pickExample(target: Page, title: string): Promise<void> {
  const value = await target.locator('[data-testid="examples"] option', { hasText: title }).first().getAttribute('value')
  expect(value, `example "${title}"`).not.toBeNull()
  await target.selectOption('[data-testid="examples"]', value!)
}

async function settled(target: Page): Promise<string> {
  await target.waitForFunction(() => {
    const state = document.querySelector<HTMLElement>('[data-testid="status"]')?.dataset.state
    return state === 'ok' || state === 'failed' || state === 'denied'
  }, undefined, { timeout: 60_000 })
  return (await target.getAttribute('[data-testid="status"]', 'data-state')) ?? ''
}

async function runAndSettle(target: Page): Promise<string> {
  await target.click('[data-testid="run"]')
  return settled(target)
}

const PENDING = '[data-testid="approval"][data-state="pending"]'

/** Waits for a call to ask (its card shows Allow / Deny) and answers it. */
async function answerApproval(target: Page, decision: 'approve' | 'deny'): Promise<void> {
  await target.waitForSelector(PENDING, { timeout: 30_000 })
  await target.click(`${PENDING} [data-testid="${decision}"]`)
}

async function typeProgram(target: Page, code: string): Promise<void> {
  await target.click('.cm-content')
  await target.keyboard.press('Control+A')
  await target.keyboard.insertText(code)
}

/** A program that writes, catches a refusal, and reports it. */
const WRITE_PROGRAM = [
  "const before = await tools.list_files({})",
  'try {',
  "  await tools.write_file({ path: 'notes/approved.md', content: '# approved\\n' })",
  "  return 'written'",
  '} catch (e) {',
  '  return e.name + ": " + e.message',
  '}',
].join('\n')

beforeAll(async () => {
  mkdirSync(shots, { recursive: true })
  server = await startPlayground({ token: 'e2e-token-0123456789abcdef' })
  browser = await launchChromium()
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } })
  watch(page, problems)
})

afterAll(async () => {
  await browser?.close()
  await server?.shutdown()
})

describe('the playground against npm start', () => {
  it('loads with no console errors, shows the catalog and connects to the server', async () => {
    await page.goto(server.url)
    await page.waitForSelector('html[data-ready="true"]')
    await page.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
    expect(await page.locator('[data-testid="catalog-tool"]').count()).toBeGreaterThan(3)
    await page.locator('[data-testid="catalog-tool"]').first().click()
    await shot(page, '01-loaded')
    expect(problems).toEqual([])
  })

  it('runs an example in the tab: its write waits for approval (Allow); output, result, timeline and cards', async () => {
    await pickExample(page, 'Parallel reads')
    await page.click('[data-testid="run"]')
    // The exclusive write asks: its bar waits (striped amber) and its card shows Allow / Deny.
    await page.waitForSelector(PENDING, { timeout: 30_000 })
    await page.waitForSelector('[data-testid="timeline-bar"][data-state="waiting"]')
    expect(await page.textContent(PENDING)).toContain('changes the workspace')
    expect(await page.textContent(PENDING)).toMatch(/expires in \d+ s/)
    const waitingCard = page.locator('[data-testid="card"]', { has: page.locator(PENDING) })
    expect(await waitingCard.getAttribute('open')).not.toBeNull()
    expect(await waitingCard.textContent()).toContain('notes/summary.md')
    await shot(page, '02a-approval-pending-tab')
    await page.click(`${PENDING} [data-testid="approve"]`)
    expect(await settled(page)).toBe('ok')
    expect(await page.getAttribute('[data-testid="approval"]', 'data-state')).toBe('allow')
    expect(await page.textContent('[data-testid="status"]')).toContain('in this tab')
    expect((await page.textContent('[data-testid="console"]'))?.length).toBeGreaterThan(0)
    expect((await page.textContent('[data-testid="result"]'))?.length).toBeGreaterThan(0)
    const bars = page.locator('[data-testid="timeline-bar"]')
    expect(await bars.count()).toBeGreaterThanOrEqual(4)
    expect(await page.locator('[data-testid="timeline-bar"][data-mode="parallel"]').count()).toBeGreaterThan(0)
    expect(await page.locator('[data-testid="timeline-bar"][data-mode="exclusive"]').count()).toBeGreaterThan(0)
    expect(await page.locator('[data-testid="card"]').count()).toBe(await bars.count())
    await shot(page, '02-run-in-tab')
    expect(problems).toEqual([])
  })

  it('Deny in the tab: the write is refused and the program catches the ToolCallError', async () => {
    await typeProgram(page, WRITE_PROGRAM)
    await page.click('[data-testid="run"]')
    await answerApproval(page, 'deny')
    expect(await settled(page)).toBe('ok')
    expect(await page.textContent('[data-testid="result"]')).toContain('ToolCallError: write_file was denied by a person')
    expect(await page.getAttribute('[data-testid="approval"]', 'data-state')).toBe('deny')
    // Denied, not failed: the bar and the card say what happened.
    expect(await page.getAttribute('[data-testid="timeline-bar"][data-state="denied"]', 'data-mode')).toBe('exclusive')
    expect(await page.getAttribute('[data-testid="timeline-bar"][data-state="denied"]', 'class')).toContain('denied')
    expect(await page.locator('[data-testid="timeline-bar"][data-state="failed"]').count()).toBe(0)
    expect(await page.locator('[data-testid="card"][data-state="denied"]').count()).toBe(1)
    await shot(page, '02b-approval-denied-tab')
  })

  it('a program in the tab cannot reach the page origin: fetching the page, reading its token and driving the server fails', async () => {
    // The escalation a user found against the old Web Worker runtime: read the page (and
    // the token in it) with the page's own origin, then POST a program to the server.
    const escalation = [
      "const html = await (await fetch('/')).text()",
      'const token = /name="toolyard-token" content="([^"]+)"/.exec(html)![1]',
      "return await (await fetch('/v1/run', { method: 'POST', headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' }, body: JSON.stringify({ code: 'return 1', description: 'escalated' }) })).json()",
    ].join('\n')
    const posted: string[] = []
    const onRequest = (request: { method(): string; url(): string }) => {
      if (request.method() === 'POST') posted.push(request.url())
    }
    page.on('request', onRequest)
    await page.click('.cm-content')
    await page.keyboard.press('Control+A')
    await page.keyboard.insertText(escalation)
    expect(await runAndSettle(page)).toBe('failed')
    page.off('request', onRequest)
    expect(await page.textContent('[data-testid="failure-kind"]')).toBe('exception')
    expect(await page.textContent('[data-testid="result"]')).toMatch(/ReferenceError: 'fetch' is not defined/)
    expect(posted).toEqual([])
    expect(await page.evaluate(() => globalThis.crossOriginIsolated)).toBe(true)
  })

  it('aborts a hot loop: kind abort', async () => {
    await pickExample(page, 'Hot loop')
    await page.click('[data-testid="run"]')
    await page.waitForSelector('[data-testid="status"][data-state="running"]')
    await page.waitForTimeout(400)
    await page.click('[data-testid="abort"]')
    await page.waitForSelector('[data-testid="status"][data-state="failed"]', { timeout: 30_000 })
    expect(await page.textContent('[data-testid="failure-kind"]')).toBe('abort')
    await shot(page, '03-abort')
  })

  it('hits the compute budget: kind timeout', async () => {
    await pickExample(page, 'Compute budget')
    expect(await page.inputValue('[data-testid="budget-compute"]')).toBe('500')
    expect(await runAndSettle(page)).toBe('failed')
    expect(await page.textContent('[data-testid="failure-kind"]')).toBe('timeout')
    expect(await page.textContent('[data-testid="result"]')).toContain('compute budget of 500 ms')
    await shot(page, '04-timeout')
  })

  it('switches SDK tabs between TypeScript and Python', async () => {
    await page.click('[data-tab="sdk"]')
    const typescript = (await page.textContent('[data-testid="sdk-text"]')) ?? ''
    expect(typescript).toMatch(/read_file/)
    await page.click('[data-sdk="python"]')
    const python = (await page.textContent('[data-testid="sdk-text"]')) ?? ''
    expect(python).not.toBe(typescript)
    expect(python).toMatch(/def /)
    await shot(page, '05-sdk-python')
    await page.click('[data-sdk="typescript"]')
    expect(await page.textContent('[data-testid="sdk-text"]')).toBe(typescript)
  })

  it('shows the SDK budget and the catalog index, and searches it in the tab and on the server', async () => {
    await page.click('[data-tab="sdk"]')
    expect(await page.textContent('[data-testid="sdk-budget"]')).toMatch(/^[\d,]+ of 12,000 characters \(sdkBudgetChars\): the full SDK fits\.$/)
    expect(await page.textContent('[data-testid="catalog-index"]')).toMatch(/^## Tool catalog\n\n12 tools:/)
    await page.fill('[data-testid="catalog-query"]', 'orders of a customer')
    await page.press('[data-testid="catalog-query"]', 'Enter')
    await page.waitForSelector('[data-testid="catalog-hit"]')
    expect(await page.locator('[data-testid="catalog-hit"] .name').first().textContent()).toBe('list_orders')
    expect(await page.textContent('[data-testid="catalog-where"]')).toContain('in this tab')
    const inTab = await page.locator('[data-testid="catalog-hit"] .name').allTextContents()
    await page.click('[data-testid="catalog-hit"] summary')
    expect(await page.locator('[data-testid="catalog-hit"] pre').first().textContent()).toContain('list_orders(args?: {')
    await shot(page, '05b-sdk-catalog-search')

    await page.click('[data-where="server"]')
    await page.click('[data-testid="catalog-search-button"]')
    await page.waitForFunction(() => document.querySelector('[data-testid="catalog-where"]')?.textContent?.includes('on the server') === true)
    expect(await page.locator('[data-testid="catalog-hit"] .name').allTextContents()).toEqual(inTab)
    await page.click('[data-where="tab"]')
  })

  it('shows the assembled prompt and wire tools per presentation mode', async () => {
    await page.click('[data-tab="prompt"]')
    await page.click('[data-mode="code"]')
    const codeTools = await page.locator('[data-testid="wire-tool"] .name').allTextContents()
    expect(codeTools).toEqual(['run_code'])
    await page.click('[data-mode="native"]')
    const nativeTools = await page.locator('[data-testid="wire-tool"] .name').allTextContents()
    expect(nativeTools).not.toContain('run_code')
    expect(nativeTools.length).toBeGreaterThan(3)
    await page.click('[data-mode="both"]')
    const bothTools = await page.locator('[data-testid="wire-tool"] .name').allTextContents()
    expect(bothTools).toContain('run_code')
    await shot(page, '06-prompt-both')
  })

  it('runs on the server with the same registry; the write\'s approval arrives over SSE and Allow answers it', async () => {
    await page.click('[data-tab="catalog"]')
    await page.click('[data-work="code"]')
    await page.click('[data-where="server"]')
    await pickExample(page, 'Parallel reads')
    await page.click('[data-testid="run"]')
    await page.waitForSelector(PENDING, { timeout: 30_000 })
    expect(await server.approvals.pending()).toHaveLength(1)
    await shot(page, '07a-approval-pending-server')
    await page.click(`${PENDING} [data-testid="approve"]`)
    expect(await settled(page)).toBe('ok')
    expect(await server.approvals.pending()).toHaveLength(0)
    expect(await page.textContent('[data-testid="status"]')).toContain('on the server')
    expect(await page.locator('[data-testid="timeline-bar"]').count()).toBeGreaterThanOrEqual(4)
    await shot(page, '07-run-on-server')
  })

  it('Deny on the server: a native write_file call waits, is denied, and says so', async () => {
    await page.click('[data-work="native"]')
    await page.selectOption('[data-testid="native-tool"]', 'write_file')
    await page.click('[data-testid="call"]')
    await answerApproval(page, 'deny')
    await page.waitForSelector('[data-testid="status"][data-state="denied"]', { timeout: 30_000 })
    expect(await page.textContent('[data-testid="failure-kind"]')).toBe('DENIED_BY_APPROVAL')
    expect(await page.textContent('[data-testid="status"]')).toContain('write_file was denied on the server')
    expect(await page.textContent('[data-testid="status"]')).not.toContain('failed')
    expect(await page.textContent('[data-testid="result"]')).toContain('write_file was denied by a person')
    await page.click('[data-work="code"]')
    await page.click('[data-where="tab"]')
  })

  it('calls one tool in native mode and shows the pipeline result', async () => {
    await page.click('[data-mode="native"]')
    await page.waitForSelector('[data-work-panel="native"]:not([hidden])')
    await page.selectOption('[data-testid="native-tool"]', 'read_file')
    await page.click('[data-testid="call"]')
    await page.waitForSelector('[data-testid="status"][data-state="ok"]', { timeout: 30_000 })
    expect(await page.textContent('[data-testid="result"]')).toContain('"isError": false')
    expect(await page.getAttribute('[data-testid="card"]', 'data-card')).toBe('read')
    await shot(page, '08-native-call')
    await page.click('[data-mode="both"]')
    expect(problems).toEqual([])
  })
})

describe('npm start type-checks programs (preflight warn)', () => {
  it('a misspelled tool argument is listed after the run', async () => {
    const code = "const files = await tools.list_files({})\ntry { await tools.read_file({ pth: 'README.md' }) } catch (e) { console.log(e.message) }\nreturn 1"
    // The checker thread loads the compiler once (seconds on a loaded machine): a run that
    // settles first gets no warning, so ask again until one does.
    let body: { isError?: boolean; value?: { preflight?: string } } = {}
    await until(
      async () => {
        const response = await fetch(`${server.url}/v1/run`, {
          method: 'POST',
          headers: { authorization: 'Bearer e2e-token-0123456789abcdef', 'content-type': 'application/json' },
          body: JSON.stringify({ code, description: 'misspelled argument' }),
        })
        expect(response.status).toBe(200)
        body = (await response.json()) as typeof body
        expect(body.isError).toBe(false)
        return body.value?.preflight !== undefined
      },
      () => `a run with a preflight warning (the last: ${JSON.stringify(body)})`,
      60_000,
      500,
    )
    expect(body.value?.preflight).toMatch(/^Preflight \(type-check against the tools SDK, before the run\) found 1 problem:\n {2}line 2, column \d+: TS2561 .*'pth' does not exist .*Did you mean to write 'path'\?/s)
  })
})

describe('an approval nobody answers', () => {
  let short: StartedServer

  beforeAll(async () => {
    short = await startPlayground({ token: 'e2e-short-0123456789abcdef', approvalTimeoutMs: 1_500 })
  })

  afterAll(async () => {
    await short?.shutdown()
  })

  it('expires on the server: the card says so and the program catches the denial', async () => {
    const other = await browser.newPage({ viewport: { width: 1440, height: 1000 } })
    const otherProblems: string[] = []
    watch(other, otherProblems)
    await other.goto(short.url)
    await other.waitForSelector('html[data-ready="true"]')
    await other.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
    await other.click('[data-where="server"]')
    await typeProgram(other, WRITE_PROGRAM)
    await other.click('[data-testid="run"]')
    await other.waitForSelector(PENDING, { timeout: 30_000 })
    expect(await settled(other)).toBe('ok')
    expect(await other.textContent('[data-testid="result"]')).toContain('write_file was denied by timeout: nobody decided within 1500 ms')
    expect(await other.getAttribute('[data-testid="approval"]', 'data-state')).toBe('expired')
    expect(await other.textContent('[data-testid="approval"]')).toContain('expired')
    expect(await other.locator('[data-testid="timeline-bar"][data-state="denied"]').count()).toBe(1)
    expect(await other.locator('[data-testid="timeline-bar"][data-state="failed"]').count()).toBe(0)
    await shot(other, '10-approval-expired-server')
    expect(await short.approvals.pending()).toHaveLength(0)
    expect(otherProblems).toEqual([])
    await other.close()
  })
})

describe('plan approval on the server', () => {
  let planned: StartedServer

  beforeAll(async () => {
    planned = await startPlayground({ token: 'e2e-plans-0123456789abcdef', approvalPlans: true })
  })

  afterAll(async () => {
    await planned?.shutdown()
  })

  it('a program that writes shows one plan card (code, calls, reason); Deny runs nothing, Allow writes without another ask', async () => {
    const tab = await browser.newPage({ viewport: { width: 1440, height: 1000 } })
    const tabProblems: string[] = []
    watch(tab, tabProblems)
    await tab.goto(planned.url)
    await tab.waitForSelector('html[data-ready="true"]')
    await tab.waitForSelector('[data-testid="server-status"][data-state="up"]', { timeout: 15_000 })
    await tab.click('[data-where="server"]')
    await typeProgram(tab, WRITE_PROGRAM)
    const PLAN = '[data-testid="plan"] [data-testid="approval"][data-kind="plan"][data-state="pending"]'

    await tab.click('[data-testid="run"]')
    await tab.waitForSelector(PLAN, { timeout: 30_000 })
    const card = (await tab.textContent(PLAN)) ?? ''
    expect(card).toContain('This program needs your approval before it runs')
    expect(card).toContain('write_file (changes the workspace)')
    expect(card).toContain('write_file (line 3)')
    expect(card).toContain("3 |   await tools.write_file({ path: 'notes/approved.md'")
    expect((await planned.approvals.pending()).map((p) => p.kind)).toEqual(['plan'])
    await shot(tab, '11-plan-approval-pending-server')
    await tab.click(`${PLAN} [data-testid="deny"]`)
    expect(await settled(tab)).toBe('denied')
    expect(await tab.textContent('[data-testid="result"]')).toContain("plan was denied before anything ran (the program was denied by a person")
    expect(await tab.locator('[data-testid="timeline-bar"]').count()).toBe(0)

    await tab.click('[data-testid="run"]')
    await tab.waitForSelector(PLAN, { timeout: 30_000 })
    await tab.click(`${PLAN} [data-testid="approve"]`)
    expect(await settled(tab)).toBe('ok')
    expect(await tab.textContent('[data-testid="result"]')).toContain('written')
    // The planned write ran without a card of its own asking.
    expect(await tab.locator('[data-testid="card"] [data-testid="approval"]').count()).toBe(0)
    expect(await planned.approvals.pending()).toHaveLength(0)
    await shot(tab, '12-plan-approved-server')
    expect(tabProblems).toEqual([])
    await tab.close()
  })
})

describe('plan approval in the tab', () => {
  it("with Approve: whole program, a program that writes shows one plan card in the tab; Deny runs nothing, Allow writes without another ask; each call asks per call again", async () => {
    const tab = await browser.newPage({ viewport: { width: 1440, height: 1000 } })
    const tabProblems: string[] = []
    watch(tab, tabProblems)
    await tab.goto(server.url)
    await tab.waitForSelector('html[data-ready="true"]')
    await tab.click('[data-where="tab"]')
    await tab.selectOption('[data-testid="plan-approval"]', 'plan')
    await typeProgram(tab, WRITE_PROGRAM)
    const PLAN = '[data-testid="plan"] [data-testid="approval"][data-kind="plan"][data-state="pending"]'

    await tab.click('[data-testid="run"]')
    await tab.waitForSelector(PLAN, { timeout: 30_000 })
    const card = (await tab.textContent(PLAN)) ?? ''
    expect(card).toContain('This program needs your approval before it runs')
    expect(card).toContain('write_file (changes the workspace)')
    expect(card).toContain('write_file (line 3)')
    expect(card).toContain("3 |   await tools.write_file({ path: 'notes/approved.md'")
    expect(await tab.textContent('[data-testid="status"]')).toBe('Waiting for your approval in this tab: this program (run_code) — Allow or Deny on its card below')
    // The server was never asked: the plan is the tab's own.
    expect(await server.approvals.pending()).toHaveLength(0)
    await shot(tab, '13-plan-approval-pending-tab')
    await tab.click(`${PLAN} [data-testid="deny"]`)
    expect(await settled(tab)).toBe('denied')
    expect(await tab.textContent('[data-testid="result"]')).toContain("plan was denied before anything ran (the program was denied by a person")
    expect(await tab.locator('[data-testid="timeline-bar"]').count()).toBe(0)

    await tab.click('[data-testid="run"]')
    await tab.waitForSelector(PLAN, { timeout: 30_000 })
    await tab.click(`${PLAN} [data-testid="approve"]`)
    expect(await settled(tab)).toBe('ok')
    expect(await tab.textContent('[data-testid="result"]')).toContain('written')
    expect(await tab.locator('[data-testid="card"] [data-testid="approval"]').count()).toBe(0)
    await shot(tab, '14-plan-approved-tab')

    // Back to "each call": no plan card, the write asks on its own card.
    await tab.selectOption('[data-testid="plan-approval"]', 'calls')
    await tab.click('[data-testid="run"]')
    await answerApproval(tab, 'approve')
    expect(await settled(tab)).toBe('ok')
    expect(await tab.locator('[data-testid="plan"] [data-kind="plan"]').count()).toBe(0)
    expect(tabProblems).toEqual([])
    await tab.close()
  })
})

describe('the playground without a server', () => {
  let plain: Server
  let url: string

  beforeAll(async () => {
    const served = await serveDir(join(root, 'demo/dist'))
    plain = served.server
    url = served.url
  })

  afterAll(() => {
    plain?.close()
  })

  it('says the server is unreachable and still runs programs in the tab', async () => {
    const offline = await browser.newPage({ viewport: { width: 1440, height: 1000 } })
    const offlineProblems: string[] = []
    watch(offline, offlineProblems)
    await offline.goto(url)
    await offline.waitForSelector('html[data-ready="true"]')
    await offline.waitForSelector('[data-testid="server-status"][data-state="down"]', { timeout: 15_000 })
    expect(await offline.textContent('[data-testid="server-status"]')).toContain('unreachable')
    expect(await offline.isDisabled('[data-where="server"]')).toBe(true)
    await pickExample(offline, 'Hello')
    expect(await runAndSettle(offline)).toBe('ok')
    expect(await offline.textContent('[data-testid="result"]')).toContain('14')
    await shot(offline, '09-no-server')
    // The failed health probe is the only network error the page may log.
    expect(offlineProblems.filter((p) => !/Failed to load resource/.test(p))).toEqual([])
    await offline.close()
  })
})
