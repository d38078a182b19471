/**
 * The playground under a call flood (issue 34 item 6): a program run in the tab that fires
 * 10,000 un-awaited calls of a demo tool that answers at once (`get_product`, latency "none"),
 * typed into the editor and started with the Run button as a person would. The page records
 * each call; what is measured is the page's main thread while the program runs:
 * - `gap`: the longest gap between two ticks of a 2 ms `setInterval` probe in the page (ms), from
 *   the click on Run on (the flood; the gap, frame and longtask maxima are reset at the click);
 * - `typing`: the same before the click, while the program is typed into the editor (CodeMirror's
 *   input task: 91 ms in one trace at load 7; it used to be counted in `gap`, though no flood runs yet);
 * - `longtask`: the longest task a PerformanceObserver `longtask` entry reports (ms, 0 = none over 50 ms);
 * - `frame`: the longest gap between two animation frames (ms);
 * - `rows`: the timeline rows drawn at the end (the cap's bound, or one per call);
 * - `wall`: Run clicked → the status line settled (ms); a flood still running after LIMIT_MS is
 *   measured as it stands, then aborted, and its wall printed as `>LIMIT_MS`.
 * The current page (demo built from this checkout) beside the old page (the demo built at
 * `BASELINE`, default the commit before the cap, in a temporary worktree) and this machine's
 * floor (the current page running a 2 s program that calls nothing, and running the flood with `?record=off`: the
 * page records no call), interleaved round by round in one process and one Chromium. Figures
 * are printed, never asserted.
 *
 * With `CPU=1`, each measured run is also traced (Chromium's timeline), and the page's main thread
 * is read by its own CPU time, which the machine's load barely moves (a gap of 250 ms at load 10
 * is mostly the thread waiting for a core): `cpu` (the sum of its tasks' CPU, ms), `task` (the
 * longest task's CPU, ms: what an idle machine's gap would be, and its one lever) and `>4ms` (tasks
 * over 4 ms of CPU). Tracing costs the page time of its own: read the gaps of a `CPU=1` run beside
 * each other only.
 *
 * Run: `npm run bench -- playground-flood` (ROUNDS=3, CALLS=10000, BASELINE=<commit> or `none`, FLOOR=0 for no floor, CPU=1).
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { extname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright'
import { launchChromium } from './_chromium.js'
import { printTable, summarize } from './_stats.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const CALLS = Number(process.env.CALLS ?? 10_000)
/** The page before the cap: every call a timeline row and a card, redrawn whole each frame. */
const BASELINE = process.env.BASELINE ?? '8d607d4'
/**
 * How long a flood may run before it is measured as it stands and aborted: the old page took
 * more than 5 minutes to record 10,000 calls at load 15 (its frames grow with the calls drawn).
 */
const LIMIT_MS = Number(process.env.LIMIT_MS ?? 120_000)
/** `CPU=1`: the main thread's CPU time from a trace of each measured run (the module comment). */
const CPU = process.env.CPU === '1'
/** `FLOOR=0` leaves out the floor (the same page running a program without calls, and the flood unrecorded: `?record=off`). */
const FLOOR = process.env.FLOOR !== '0'

const FLOOD = `const ps = []\nfor (let i = 0; i < ${CALLS}; i++) ps.push(tools.get_product({ id: 'P012' }))\nreturn (await Promise.all(ps)).length`
/** The floor: the same page, a run as long as a flood (the worker spins 2 s), no calls. */
const IDLE = 'const end = Date.now() + 2000\nwhile (Date.now() < end) {}\nreturn 1'
const WARM = `const ps = []\nfor (let i = 0; i < 50; i++) ps.push(tools.get_product({ id: 'P012' }))\nreturn (await Promise.all(ps)).length`

/**
 * The probe, installed in the page before the flood (a string: tsx's helpers do not exist in
 * the page): a 2 ms interval, an animation-frame loop and a longtask observer, maxima kept.
 */
const PROBE = `{
  const probe = { last: performance.now(), gap: 0, lastFrame: performance.now(), frame: 0, longtask: 0, on: true }
  globalThis.floodProbe = probe
  setInterval(() => {
    const now = performance.now()
    probe.gap = Math.max(probe.gap, now - probe.last)
    probe.last = now
  }, 2)
  const frame = () => {
    const now = performance.now()
    probe.frame = Math.max(probe.frame, now - probe.lastFrame)
    probe.lastFrame = now
    if (probe.on) requestAnimationFrame(frame)
  }
  requestAnimationFrame(frame)
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) probe.longtask = Math.max(probe.longtask, entry.duration)
  }).observe({ type: 'longtask' })
}`

/** The page's main thread by CPU time over a traced stretch (`CPU=1`). */
interface CpuFigures {
  /** The sum of its tasks' CPU time, ms. */
  readonly cpu: number
  /** The longest task's CPU time, ms. */
  readonly task: number
  /** Tasks of more than 4 ms of CPU. */
  readonly over4: number
}

interface TraceEvent {
  readonly name: string
  readonly ph: string
  readonly pid: number
  readonly tid: number
  readonly dur?: number
  readonly tdur?: number
  readonly args?: { readonly name?: string }
}

/** Traces the page's timeline while `during` runs; the renderer's main thread's tasks by CPU time. */
async function tracedCpu<T>(page: Page, during: () => Promise<T>): Promise<{ readonly value: T; readonly cpu: CpuFigures }> {
  const cdp = await page.context().newCDPSession(page)
  const events: TraceEvent[] = []
  cdp.on('Tracing.dataCollected', (data) => {
    for (const event of data.value) events.push(event as unknown as TraceEvent)
  })
  const complete = new Promise<void>((resolve) => cdp.once('Tracing.tracingComplete', () => resolve()))
  await cdp.send('Tracing.start', { categories: 'devtools.timeline,disabled-by-default-devtools.timeline', transferMode: 'ReportEvents' })
  let value: T
  try {
    value = await during()
  } finally {
    await cdp.send('Tracing.end')
    await complete
    await cdp.detach()
  }
  // The renderer's main thread: the CrRendererMain that ran tasks (the page's process has one).
  const mains = events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain')
  const tasksOf = (main: TraceEvent) => events.filter((e) => e.pid === main.pid && e.tid === main.tid && e.name === 'RunTask' && e.ph === 'X')
  const tasks = mains.map(tasksOf).sort((a, b) => b.length - a.length)[0] ?? []
  const cpu = tasks.map((task) => (task.tdur ?? 0) / 1000)
  return { value, cpu: { cpu: cpu.reduce((sum, ms) => sum + ms, 0), task: Math.max(0, ...cpu), over4: cpu.filter((ms) => ms > 4).length } }
}

interface Figures {
  readonly gap: number
  readonly typing: number
  readonly longtask: number
  readonly frame: number
  readonly rows: number
  readonly wall: number
  /** The run settled within LIMIT_MS. */
  readonly finished: boolean
  /** With `CPU=1`. */
  readonly cpu?: CpuFigures
}

/** Builds the playground of `dir` (a checkout) into `dir`/demo/dist. */
function buildDemo(dir: string): string {
  execFileSync(process.execPath, ['scripts/build-demo.mjs'], { cwd: dir, stdio: 'pipe' })
  return join(dir, 'demo/dist')
}

/** A static server for `dist`, cross-origin isolated as `npm start` serves the playground. */
async function serve(dist: string): Promise<{ readonly url: string; readonly server: Server }> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.map': 'application/json', '.wasm': 'application/wasm' }
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '')
    const file = join(dist, path === '/' ? 'index.html' : path)
    if (!file.startsWith(dist) || !existsSync(file)) {
      res.writeHead(404).end()
      return
    }
    res
      .writeHead(200, {
        'Content-Type': types[extname(file)] ?? 'application/octet-stream',
        'Cross-Origin-Opener-Policy': 'same-origin',
        'Cross-Origin-Embedder-Policy': 'require-corp',
        'Cross-Origin-Resource-Policy': 'same-origin',
      })
      .end(readFileSync(file))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server }
}

/** One flood (or `program`) in a fresh tab of `url`: a warm-up run, then the measured one. */
async function flood(browser: Browser, url: string, program = FLOOD, expected = String(CALLS)): Promise<Figures> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } })
  try {
    await page.goto(url)
    await page.waitForSelector('html[data-ready="true"]')
    await page.selectOption('[data-testid="latency"]', '0')
    // The old page records the calls slower than they come: its run must not meet the 60 s wall first.
    await page.fill('#budget-wall', '600000')
    const type = async (code: string): Promise<void> => {
      await page.click('.cm-content')
      await page.keyboard.press('Control+A')
      await page.keyboard.insertText(code)
    }
    const run = async (code: string, typed?: () => Promise<unknown>, alreadyTyped = false): Promise<number | undefined> => {
      if (!alreadyTyped) await type(code)
      await typed?.()
      const started = Date.now()
      await page.click('[data-testid="run"]')
      try {
        await page.waitForFunction(() => {
          const state = document.querySelector<HTMLElement>('[data-testid="status"]')?.dataset.state
          return state === 'ok' || state === 'failed' || state === 'denied'
        }, undefined, { timeout: LIMIT_MS, polling: 100 })
      } catch {
        return undefined
      }
      const state = await page.getAttribute('[data-testid="status"]', 'data-state')
      if (state !== 'ok') throw new Error(`the run ended ${state}: ${await page.textContent('[data-testid="result"]')}`)
      return Date.now() - started
    }
    await run(WARM)
    await page.evaluate(PROBE)
    // The typing's maxima kept apart; the flood's counted from the click on Run.
    const typed = () =>
      page.evaluate(
        `(() => { const p = globalThis.floodProbe; p.typing = p.gap; p.gap = 0; p.frame = 0; p.longtask = 0; p.last = p.lastFrame = performance.now() })()`,
      )
    let wall: number | undefined
    let traced: CpuFigures | undefined
    if (CPU) {
      // Traced from the typing's end: the click on Run, the flood and its settling.
      await type(program)
      await typed()
      const { value, cpu } = await tracedCpu(page, () => run(program, undefined, true))
      wall = value
      traced = cpu
    } else {
      wall = await run(program, typed)
    }
    if (wall !== undefined) {
      const result = await page.textContent('[data-testid="result"]')
      if (result?.trim() !== expected) throw new Error(`the run returned ${result}`)
    }
    const probe = (await page.evaluate(
      `(() => { const p = globalThis.floodProbe; p.on = false; return { gap: p.gap, typing: p.typing, frame: p.frame, longtask: p.longtask, rows: document.querySelectorAll('#timeline .row').length } })()`,
    )) as Omit<Figures, 'wall'>
    return { ...probe, wall: wall ?? LIMIT_MS, finished: wall !== undefined, ...(traced === undefined ? {} : { cpu: traced }) }
  } finally {
    await page.close()
  }
}

interface Variant {
  readonly name: string
  readonly url: string
  readonly server: Server
  readonly program?: string
  readonly expected?: string
  readonly figures: Figures[]
}
const variants: Variant[] = []
let baselineDir: string | undefined
const browser = await launchChromium()
try {
  const current = await serve(buildDemo(root))
  variants.push({ name: 'this checkout', ...current, figures: [] })
  // The floor of this machine, same page and harness: the run without calls, and the flood with the page recording nothing.
  if (FLOOR) {
    variants.push({ name: 'floor: no calls', ...current, program: IDLE, expected: '1', figures: [] })
    variants.push({ name: 'floor: flood, no record', url: `${current.url}?record=off`, server: current.server, figures: [] })
  }
  if (BASELINE !== 'none') {
    baselineDir = mkdtempSync(join(tmpdir(), 'toolyard-flood-baseline-'))
    execFileSync('git', ['worktree', 'add', '--detach', baselineDir, BASELINE], { cwd: root, stdio: 'pipe' })
    symlinkSync(join(root, 'node_modules'), join(baselineDir, 'node_modules'))
    variants.push({ name: `old page (${BASELINE})`, ...(await serve(buildDemo(baselineDir))), figures: [] })
  }
  console.log(`${CALLS} un-awaited get_product calls in the playground tab, ${ROUNDS} rounds interleaved; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
      const figures = await flood(browser, variant.url, variant.program, variant.expected)
      variant.figures.push(figures)
      console.log(
        `  round ${round + 1} ${variant.name}: gap ${figures.gap.toFixed(1)} ms, typing ${figures.typing.toFixed(1)} ms, longtask ${figures.longtask.toFixed(0)} ms, frame ${figures.frame.toFixed(1)} ms, ` +
          `rows ${figures.rows}, wall ${figures.finished ? '' : '>'}${figures.wall} ms` +
          (figures.cpu === undefined ? '' : `, cpu ${figures.cpu.cpu.toFixed(0)} ms, longest task ${figures.cpu.task.toFixed(1)} ms cpu, ${figures.cpu.over4} over 4 ms`) +
          ` (load ${loadavg()[0]!.toFixed(2)})`,
      )
    }
  }
  const row = (variant: Variant) => {
    const of = (pick: (f: Figures) => number) => summarize(variant.figures.map(pick))
    const max = (pick: (f: Figures) => number) => Math.max(...variant.figures.map(pick))
    return {
      page: variant.name,
      'gap p50 ms': of((f) => f.gap).median,
      'gap max ms': max((f) => f.gap),
      'typing p50 ms': of((f) => f.typing).median,
      'longtask max ms': max((f) => f.longtask),
      'frame p50 ms': of((f) => f.frame).median,
      'frame max ms': max((f) => f.frame),
      rows: of((f) => f.rows).median,
      'wall p50 ms': `${variant.figures.every((f) => f.finished) ? '' : '>'}${of((f) => f.wall).median.toFixed(0)}`,
      ...(CPU
        ? {
            'cpu p50 ms': of((f) => f.cpu?.cpu ?? Number.NaN).median,
            'task cpu p50 ms': of((f) => f.cpu?.task ?? Number.NaN).median,
            'task cpu max ms': max((f) => f.cpu?.task ?? Number.NaN),
            '>4ms p50': of((f) => f.cpu?.over4 ?? Number.NaN).median,
          }
        : {}),
    }
  }
  printTable(variants.map(row), `The page's main thread during a ${CALLS}-call flood (target: longest gap ≤ 20 ms); load after ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
} finally {
  await browser.close()
  for (const server of new Set(variants.map((variant) => variant.server))) server.close()
  if (baselineDir !== undefined) {
    try {
      execFileSync('git', ['worktree', 'remove', '--force', baselineDir], { cwd: root, stdio: 'pipe' })
    } catch {
      rmSync(baselineDir, { recursive: true, force: true })
    }
  }
}
