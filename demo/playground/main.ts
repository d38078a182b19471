/**
 * The toolyard playground: the demo tools' catalog, the SDK and the assembled prompt a
 * model would see, a program editor that runs Code Mode programs in this tab (a Web
 * Worker) or on the server (the HTTP API), a live dispatch timeline with presenter
 * cards, and native calls of a single tool. The writing tools ask for approval: a call
 * that waits shows Allow / Deny on its card; on the server, the "Waiting for you" panel
 * lists every request that waits (a reload or a server restart included).
 *
 * @module
 */
import type { PendingApproval } from '../../src/approvals/types.js'
import { renderToolsSdkWithinBudget } from '../../src/code-mode/sdk.js'
import type { SdkToolInput } from '../../src/code-mode/sdk.js'
import type { CodeLogEntry } from '../../src/code-runtime/contract.js'
import { SANDBOX_DEFAULT_LIMITS } from '../../src/code-runtime/sandbox-runtime.js'
import type { JsonValue } from '../../src/json/json-value.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent } from '../../src/runtime-types.js'
import type { ToolExecutionResult, ToolPresentationMode } from '../../src/types.js'
import { failureKind } from './backend.js'
import type { ApprovalListener, Backend, ProgramLanguage, RunBudgets, RunOutcome } from './backend.js'
import { approvalStateOf, renderApprovalPanel } from './approval-card.js'
import { watchAttention } from './attention.js'
import { isDenialCode, renderCard, renderNativeCard } from './cards.js'
import { renderBudget, renderIndex, wireCatalogSearch } from './catalog-panel.js'
import type { SubCallRecord } from './cards.js'
import { byId, h, replaceChildren, showJson, syncChildren } from './dom.js'
import { createJsonEditor, createProgramEditor } from './editor.js'
import type { ToolCompletion } from './editor.js'
import { exampleArguments, EXAMPLES, PYTHON_EXAMPLES } from './examples.js'
import type { Example } from './examples.js'
import { createLocalBackend } from './local-backend.js'
import { checkServer, createServerBackend, serverInfo } from './server-backend.js'
import type { ServerStatus } from './server-backend.js'
import { MAX_BUILT_PER_FRAME, RunCalls, type DrawBudget } from './run-calls.js'
import { renderTimeline, updateHiddenRow } from './timeline.js'
import { createWaitingPanel } from './waiting-panel.js'

type Where = 'tab' | 'server'
type LeftTab = 'catalog' | 'sdk' | 'prompt'
type WorkTab = 'code' | 'native'
type SdkLanguage = 'typescript' | 'python'

const state = {
  mode: 'both' as ToolPresentationMode,
  where: 'tab' as Where,
  left: 'catalog' as LeftTab,
  work: 'code' as WorkTab,
  sdk: 'typescript' as SdkLanguage,
  language: 'typescript' as ProgramLanguage,
  server: { up: false, why: 'checking…' } as ServerStatus,
  running: undefined as AbortController | undefined,
}

/** The sandbox's own defaults (5 s compute, 60 s wall): what `npm start` uses, and the tab's starting values. */
const DEFAULT_BUDGETS: RunBudgets = { computeMs: SANDBOX_DEFAULT_LIMITS.computeMs, maxWallMs: SANDBOX_DEFAULT_LIMITS.maxWallMs }

const budgets = (): RunBudgets => ({
  computeMs: clampInt(byId<HTMLInputElement>('budget-compute').value, 10, 600_000, DEFAULT_BUDGETS.computeMs),
  maxWallMs: clampInt(byId<HTMLInputElement>('budget-wall').value, 50, 600_000, DEFAULT_BUDGETS.maxWallMs),
})

function clampInt(text: string, min: number, max: number, fallback: number): number {
  const n = Math.round(Number(text))
  return Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : fallback
}

/**
 * The budgets the server runs programs with, from the `<meta name="toolyard-limits">` it
 * injects (`{"computeMs":…,"maxWallMs":…}`); the sandbox defaults when it injects none.
 */
function serverBudgets(): RunBudgets {
  const content = document.querySelector<HTMLMetaElement>('meta[name="toolyard-limits"]')?.content
  try {
    const parsed = JSON.parse(content ?? 'null') as Partial<Record<keyof RunBudgets, unknown>> | null
    const pick = (key: keyof RunBudgets) => (typeof parsed?.[key] === 'number' && Number.isInteger(parsed[key]) && parsed[key] > 0 ? parsed[key] : DEFAULT_BUDGETS[key])
    return { computeMs: pick('computeMs'), maxWallMs: pick('maxWallMs') }
  } catch {
    return DEFAULT_BUDGETS
  }
}

byId<HTMLInputElement>('budget-compute').value = String(DEFAULT_BUDGETS.computeMs)
byId<HTMLInputElement>('budget-wall').value = String(DEFAULT_BUDGETS.maxWallMs)
/** The tab's own budgets while the fields show the server's. */
let tabBudgets: RunBudgets | undefined

/** Apple systems write the run shortcut ⌘↵; every other system Ctrl+↵ (both keys work everywhere). */
const platformName = (navigator as Navigator & { userAgentData?: { platform?: string } }).userAgentData?.platform || navigator.platform || navigator.userAgent
const RUN_KEY = /mac|iphone|ipad|ipod/i.test(platformName) ? { short: '⌘↵', long: '⌘+Enter' } : { short: 'Ctrl+↵', long: 'Ctrl+Enter' }
byId('run').title = `Run (${RUN_KEY.long})`
byId('run').querySelector('kbd')!.textContent = RUN_KEY.short

const local = createLocalBackend(budgets())
const registry = local.runtime
const info = serverInfo()
const server = createServerBackend(info)
/** Where code runs survives a reload (this tab's session), so a page reloaded mid-run comes back to the server and its waiting requests. */
const WHERE_KEY = 'toolyard-playground-where'
let restoreServer = readWhere() === 'server'
const waiting = createWaitingPanel({ server, box: byId('waiting'), visible: () => state.where === 'server' && state.server.up })
// Whatever waits for a person, on any surface of the page: the title, a pinned bar, the status line.
watchAttention({
  bar: byId('attention'),
  status: byId('status'),
  own: (panel) => panel.closest('#cards, [data-testid="plan"]') !== null,
  where: () => (state.where === 'server' ? 'on the server' : 'in this tab'),
})

function readWhere(): string | null {
  try {
    return sessionStorage.getItem(WHERE_KEY)
  } catch {
    return null
  }
}

function saveWhere(where: Where): void {
  try {
    sessionStorage.setItem(WHERE_KEY, where)
  } catch {
    // Storage disabled: a reload starts in the tab.
  }
}

// ───────────────────────── what the model sees ─────────────────────────

/** What a program of the `code` agent may call: its view's `code` (never the transport, never a native-only tool). */
function sdkInputs(): SdkToolInput[] {
  const view = registry.view('code')
  return view.code.map((schema) => ({
    name: schema.name,
    description: schema.description,
    parameters: schema.parameters,
    output: view.get(schema.name)?.output.schema ?? {},
  }))
}

function renderCatalog(): void {
  const schemas = registry.schemas()
  replaceChildren(
    byId('catalog'),
    schemas.map((schema) => {
      const definition = registry.get(schema.name)
      return h(
        'details',
        { class: 'tool', 'data-testid': 'catalog-tool' },
        h('summary', {}, h('span', { class: 'name' }, schema.name), h('span', { class: 'desc' }, firstLine(schema.description))),
        h('p', { class: 'hint small' }, schema.description),
        h('h3', {}, 'Arguments'),
        h('pre', { class: 'schema' }, showJson(schema.parameters)),
        h('h3', {}, 'Output'),
        h('pre', { class: 'schema' }, showJson(definition?.output.schema ?? {})),
        definition?.timeoutMs === undefined ? null : h('p', { class: 'hint small' }, `timeoutMs: ${definition.timeoutMs}`),
      )
    }),
  )
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? ''
  return line.length > 110 ? `${line.slice(0, 110)}…` : line
}

function renderSdk(): void {
  let text: string
  const budget = registry.options.sdkBudgetChars
  try {
    const inputs = sdkInputs()
    const rendered = renderToolsSdkWithinBudget(inputs, { language: state.sdk, maxChars: budget })
    text = rendered.text
    renderBudget(rendered, budget)
    renderIndex(inputs, state.sdk, budget)
  } catch (error) {
    text = `(the SDK could not be rendered: ${error instanceof Error ? error.message : String(error)})`
  }
  byId('sdk-text').textContent = text
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-sdk]')) {
    button.setAttribute('aria-selected', String(button.dataset.sdk === state.sdk))
  }
}

function renderPrompt(): void {
  const sectionsBox = byId('prompt-sections')
  const toolsBox = byId('wire-tools')
  try {
    const assembly = registry.assemble(state.mode)
    byId('prompt-hint').textContent = {
      native: 'native: every tool is a wire tool; no SDK section.',
      code: 'code: one wire tool, run_code; the tools exist only as the SDK a program calls.',
      both: 'both: every tool as a wire tool, plus run_code and the SDK.',
    }[state.mode]
    replaceChildren(
      sectionsBox,
      assembly.sections.length === 0
        ? h('p', { class: 'empty' }, 'No sections in this presentation.')
        : assembly.sections.map((section) =>
            h('div', { class: 'section' }, h('div', { class: 'meta' }, `${section.id} · order ${section.order}`), h('pre', { class: 'code' }, section.text)),
          ),
    )
    byId('wire-count').textContent = `(${assembly.tools.length})`
    replaceChildren(
      toolsBox,
      assembly.tools.map((tool) =>
        h(
          'details',
          { class: 'tool', 'data-testid': 'wire-tool' },
          h('summary', {}, h('span', { class: 'name' }, tool.name), h('span', { class: 'desc' }, firstLine(tool.description))),
          h('pre', { class: 'schema' }, showJson(tool)),
        ),
      ),
    )
  } catch (error) {
    replaceChildren(sectionsBox, h('p', { class: 'err' }, error instanceof Error ? error.message : String(error)))
    replaceChildren(toolsBox)
  }
}

// ───────────────────────── chrome: switches and tabs ─────────────────────────

function setRadio(selector: string, key: string, value: string): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>(selector)) {
    button.setAttribute('aria-checked', String(button.dataset[key] === value))
  }
}

function applyMode(): void {
  setRadio('[data-mode]', 'mode', state.mode)
  const codeOk = state.mode !== 'native'
  const nativeOk = state.mode !== 'code'
  const codeTab = document.querySelector<HTMLButtonElement>('[data-work="code"]')!
  const nativeTab = document.querySelector<HTMLButtonElement>('[data-work="native"]')!
  codeTab.title = codeOk ? '' : 'run_code is not offered under native presentation'
  nativeTab.title = nativeOk ? '' : 'under code presentation the tools are callable only from a program'
  byId('code-mode-hint').textContent = codeOk
    ? `Programs call tools.<name>(args) with the agent "${state.mode}". ${RUN_KEY.long} runs.`
    : 'Under native presentation the model has no run_code tool: switch to code or both to run programs.'
  byId('native-mode-hint').textContent = nativeOk
    ? `Calls go through the full pipeline with the agent "${state.mode}".`
    : 'Under code presentation tools are only callable from a program: a direct call is refused (try it).'
  byId<HTMLButtonElement>('run').disabled = !codeOk || state.running !== undefined
  renderPrompt()
}

function applyWhere(): void {
  setRadio('[data-where]', 'where', state.where)
  const computeInput = byId<HTMLInputElement>('budget-compute')
  const wallInput = byId<HTMLInputElement>('budget-wall')
  const onServer = state.where === 'server'
  // On the server the fields show the server's budgets (read-only); back in the tab, the tab's own.
  if (onServer && !computeInput.disabled) {
    tabBudgets = budgets()
    const shown = serverBudgets()
    computeInput.value = String(shown.computeMs)
    wallInput.value = String(shown.maxWallMs)
  } else if (!onServer && tabBudgets !== undefined) {
    computeInput.value = String(tabBudgets.computeMs)
    wallInput.value = String(tabBudgets.maxWallMs)
    tabBudgets = undefined
  }
  computeInput.disabled = onServer
  wallInput.disabled = onServer
  byId<HTMLSelectElement>('latency').disabled = onServer
  // The server's plan approval is its own setting (startServer({ approvalPlans })).
  byId<HTMLSelectElement>('plan-approval').disabled = onServer
  computeInput.parentElement!.title = onServer ? 'The server applies its own budgets' : 'Busy milliseconds the program may spend (measured inside the sandbox)'
  waiting.update()
}

function applyLeft(): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-tab]')) {
    button.setAttribute('aria-selected', String(button.dataset.tab === state.left))
  }
  for (const panel of document.querySelectorAll<HTMLElement>('[data-panel]')) panel.hidden = panel.dataset.panel !== state.left
  if (state.left === 'sdk') renderSdk()
  if (state.left === 'prompt') renderPrompt()
}

function applyWork(): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-work]')) {
    button.setAttribute('aria-selected', String(button.dataset.work === state.work))
  }
  for (const panel of document.querySelectorAll<HTMLElement>('[data-work-panel]')) panel.hidden = panel.dataset.workPanel !== state.work
}

function renderServerStatus(): void {
  const pill = byId('server-status')
  if (state.server.up) {
    pill.dataset.state = 'up'
    pill.textContent = 'server: connected'
    pill.title = `API at ${info.api}`
  } else {
    pill.dataset.state = 'down'
    pill.textContent = 'server: unreachable'
    pill.title = `${state.server.why}. Everything in this tab still works.`
  }
  const serverButton = document.querySelector<HTMLButtonElement>('[data-where="server"]')!
  serverButton.disabled = !state.server.up
  serverButton.title = state.server.up ? 'Run on the server (HTTP API)' : `The server is unreachable: ${state.server.why}`
  if (!state.server.up && state.where === 'server') {
    state.where = 'tab'
    applyWhere()
  } else if (state.server.up && restoreServer && state.where === 'tab') {
    state.where = 'server'
    applyWhere()
  }
  if (state.server.up) restoreServer = false
  waiting.update()
}

function backend(): Backend {
  return state.where === 'server' ? server : local
}

// ───────────────────────── output ─────────────────────────

function setStatus(kind: 'idle' | 'running' | 'ok' | 'failed' | 'denied', ...children: (Node | string)[]): void {
  const status = byId('status')
  status.dataset.state = kind
  replaceChildren(status, children)
}

function appendConsole(entry: CodeLogEntry): void {
  const line = h('span', { class: entry.level ?? 'log' }, `${entry.text}\n`)
  const box = byId('console')
  box.appendChild(line)
  box.scrollTop = box.scrollHeight
}

function clearOutput(): void {
  byId('console').replaceChildren()
  const result = byId('result')
  result.className = 'result'
  result.replaceChildren()
  replaceChildren(byId('timeline'), h('p', { class: 'hint small' }, 'Sub-calls appear here as bars over time.'))
  byId('cards').replaceChildren()
  document.querySelector('[data-testid="plan"]')?.remove()
}

function statsText(outcome: RunOutcome | undefined, wallMs: number): string {
  const stats = outcome?.stats
  if (stats === undefined) return `${wallMs.toFixed(0)} ms`
  return `wall ${stats.wallMs.toFixed(0)} ms · compute ${stats.computeMs.toFixed(0)} ms`
}

function showResult(result: ToolExecutionResult, outcome: RunOutcome | undefined, elapsed: number, where: Where, streamed: boolean): void {
  const box = byId('result')
  const whereText = where === 'server' ? 'on the server' : 'in this tab'
  if (!result.isError) {
    const value = result.value as { logs?: unknown; result?: JsonValue }
    if (!streamed && Array.isArray(value.logs)) for (const text of value.logs) appendConsole({ source: 'console', text: String(text) })
    box.textContent = value.result === undefined ? '(no return value)' : showJson(value.result)
    setStatus('ok', '✓ completed ', whereText, h('span', { class: 'stats' }, statsText(outcome, elapsed)))
    return
  }
  box.className = 'result error'
  const kind = failureKind(result)
  const code = result.error.info?.code ?? 'ERROR'
  // run_code itself refused by a gate or a person did not fail: say what happened.
  const denied = kind === undefined && isDenialCode(code)
  box.textContent = result.error.message
  setStatus(
    denied ? 'denied' : 'failed',
    h('span', { class: 'kind', 'data-testid': 'failure-kind' }, kind ?? code),
    denied ? 'the call was denied ' : kind === undefined ? 'the call failed ' : 'the run failed ',
    whereText,
    h('span', { class: 'stats' }, statsText(outcome, elapsed)),
  )
}

// ───────────────────────── approvals ─────────────────────────

/** A sub-call's card, with its approval panel (Allow / Deny while it waits) on top. */
function cardWithApproval(record: SubCallRecord, open: boolean, decide: Backend['decide']): HTMLDetailsElement {
  const approval = record.approval
  const waiting = approval?.state === 'pending' && record.end === undefined
  const card = renderCard(record, registry.get(record.name, state.mode), open || waiting)
  if (approval !== undefined) {
    if (waiting) card.classList.add('waiting')
    card.querySelector('.body')?.prepend(renderApprovalPanel(approval, (decision) => decide(approval.id, decision)))
  }
  return card
}

/** What redraws a card: it is rebuilt only when this changes (so a button is never replaced under a click). */
function cardKey(record: SubCallRecord): string {
  return `${record.end ?? ''}|${record.isError ?? ''}|${record.approval?.state ?? ''}`
}

/** The page's record of a request: waiting. */
function pendingState(request: PendingApproval): NonNullable<SubCallRecord['approval']> {
  return approvalStateOf(request)
}

// ───────────────────────── running programs ─────────────────────────

/**
 * How often a run with more calls than it draws (a flood: run-calls.ts) is redrawn at most,
 * in ms. A frame of the playground costs tens of ms of script, style and paint on a loaded
 * machine, while the same thread records thousands of calls: a redraw every frame about
 * doubled a 10,000-call flood's wall time (4.6 s against 2.6 s with no redraws, load 2.9).
 */
const FLOOD_REDRAW_MS = 200

/** `?record=off`: the page records no sub-call (bench/playground-flood.bench.ts: the page's floor under a flood). */
const RECORDS_CALLS = new URLSearchParams(location.search).get('record') !== 'off'

const initialExample = EXAMPLES[0]!
const editor = createProgramEditor(byId('editor'), initialExample.code, () => void run(), toolCompletions)

function toolCompletions(): ToolCompletion[] {
  return registry.schemas('code').map((schema) => ({
    name: schema.name,
    signature: `(args) → Promise`,
    description: schema.description,
  }))
}

async function run(): Promise<void> {
  if (state.running !== undefined || state.mode === 'native') return
  const controller = new AbortController()
  state.running = controller
  byId<HTMLButtonElement>('run').disabled = true
  byId<HTMLButtonElement>('abort').disabled = false
  clearOutput()
  const where = state.where
  setStatus('running', `Running ${where === 'server' ? 'on the server' : 'in this tab (Web Worker)'}…`)
  // Tab runs: bars are placed from the moment Run was pressed. Server runs: from the
  // server's first sub-call (its clock, not ours: no skew between machines).
  let origin: number | undefined = where === 'tab' ? Date.now() : undefined
  const clock = performance.now()
  // Every sub-call by id; a frame draws a bounded set of them (run-calls.ts: the first
  // MAX_DRAWN_CALLS, those that asked a person, the cards the user opened) and one summary
  // row for the rest, so a 10,000-call flood costs a frame what 200 calls do.
  const calls = new RunCalls()
  const userOpened = new Set<string>()
  const runner = backend()
  const built = new Map<string, { readonly key: string; readonly card: HTMLDetailsElement }>()
  let cardsMore: HTMLElement | undefined
  let drawnSpan = 0
  let frame = 0
  /**
   * Draws the run; a frame builds at most MAX_BUILT_PER_FRAME cards and rows (new ones, or
   * ones whose call changed), so the first frames of a flood do not build 200 of each at
   * once: a card or row past the bound keeps last frame's drawing, a new one waits, and
   * the next frame goes on. `complete` (the run has ended) draws everything.
   */
  const draw = (complete = false): void => {
    frame = 0
    lastDraw = performance.now()
    const budget: DrawBudget = { left: complete ? Number.POSITIVE_INFINITY : MAX_BUILT_PER_FRAME, short: false }
    const all = calls.drawn()
    // Cards the user opened stay open across redraws; a run of up to three calls opens them all.
    const cards: HTMLElement[] = []
    for (const record of all) {
      const key = cardKey(record)
      const cached = built.get(record.subCallId)
      if (cached?.key === key) {
        cards.push(cached.card)
        continue
      }
      if (budget.left <= 0) {
        budget.short = true
        // A new call waits for the next frame, and so does every call after it (the order holds).
        if (cached === undefined) break
        cards.push(cached.card)
        continue
      }
      budget.left--
      const card = cardWithApproval(record, calls.size <= 3 || userOpened.has(record.subCallId), runner.decide)
      // A click on the summary is the user's toggle (a toggle event also fires for the initial state).
      card.querySelector('summary')?.addEventListener('click', () => {
        if (card.open) userOpened.delete(record.subCallId)
        else userOpened.add(record.subCallId)
        calls.keep(record.subCallId)
      })
      built.set(record.subCallId, { key, card })
      cards.push(card)
    }
    const list = cards.length === all.length ? all : all.slice(0, cards.length)
    const hidden = calls.hidden(list)
    // While a flood runs the axis only grows, by doubling (growingSpan): a redraw moves no settled bar.
    const growFrom = !complete && calls.size > calls.maxDrawn ? drawnSpan : undefined
    drawnSpan = renderTimeline(byId('timeline'), list, where === 'tab' ? performance.now() - clock : calls.latest, hidden, budget, growFrom)
    if (hidden.count > 0) {
      // One node, its text replaced in place: the box below is left untouched.
      cardsMore = updateHiddenRow(cardsMore, hidden, 'cards-more')
      cards.push(cardsMore)
    }
    const box = byId('cards')
    // Only the cards that changed are swapped: a redraw must not pull a button away from a pointer.
    syncChildren(box, cards)
    // What the budget left waits for the next frame, flood or not.
    if (budget.short) nextFrame()
  }
  let lastDraw = Number.NEGATIVE_INFINITY
  let redraw: ReturnType<typeof setTimeout> | undefined
  const nextFrame = (): void => {
    if (frame === 0) frame = requestAnimationFrame(() => draw())
  }
  // A run with more calls than it draws (a flood) is redrawn at most every FLOOD_REDRAW_MS:
  // its counts move 5 times a second instead of 60.
  const schedule = (): void => {
    if (frame !== 0 || redraw !== undefined) return
    const wait = calls.size > calls.maxDrawn ? lastDraw + FLOOD_REDRAW_MS - performance.now() : 0
    if (wait <= 0) nextFrame()
    else
      redraw = setTimeout(() => {
        redraw = undefined
        nextFrame()
      }, wait)
  }
  // Keep running bars growing while anything is in flight (a count, never a scan of every call).
  const ticker = setInterval(() => {
    if (calls.inFlight > 0) schedule()
  }, 50)
  // A plan request (the whole program, before it runs) has no sub-call card: its own panel above the cards.
  let plan: ReturnType<typeof pendingState> | undefined
  const planBox = h('div', { class: 'plan', 'data-testid': 'plan' })
  const drawPlan = (): void => {
    const shown = plan
    if (shown !== undefined) replaceChildren(planBox, renderApprovalPanel(shown, (decision) => runner.decide(shown.id, decision)))
  }
  let outcome: RunOutcome | undefined
  try {
    outcome = await runner.run(
      editor.text(),
      state.language,
      state.mode,
      budgets(),
      {
        log: appendConsole,
        approval(request: PendingApproval) {
          if (request.kind === 'plan') {
            plan = pendingState(request)
            byId('cards').before(planBox)
            drawPlan()
            setStatus('running', `The program waits for your approval ${where === 'server' ? 'on the server' : 'in this tab'}…`)
            return
          }
          void waiting.refresh()
          const record = calls.get(request.callId)
          if (record === undefined) return
          record.approval = pendingState(request)
          // A call waiting for a person is drawn, whatever its place in the run.
          calls.keep(request.callId)
          schedule()
        },
        approvalSettled(settled) {
          void waiting.refresh()
          if (plan?.id === settled.id) {
            plan.state = settled.outcome
            drawPlan()
            return
          }
          const record = calls.get(settled.callId)
          if (record?.approval?.id !== settled.id) return
          record.approval.state = settled.outcome
          schedule()
        },
        dispatchStart(event: CodeDispatchStartEvent) {
          if (!RECORDS_CALLS) return
          let mode: 'parallel' | 'exclusive' = 'exclusive'
          try {
            mode = registry.executionMode({ name: event.name, arguments: event.arguments, agent: state.mode })
          } catch {
            // Unknown to this tab's registry: draw it as exclusive, the fail-closed class.
          }
          origin ??= event.startedAt
          calls.start({ subCallId: event.subCallId, name: event.name, arguments: event.arguments, start: Math.max(0, event.startedAt - origin), mode })
          schedule()
        },
        dispatch(event: CodeDispatchEvent) {
          const settled = calls.settle(event.subCallId, {
            durationMs: event.durationMs,
            isError: event.isError,
            content: event.content,
            ...(event.error === undefined ? {} : { error: event.error }),
          })
          if (settled !== undefined) schedule()
        },
      },
      controller.signal,
    )
    showResult(outcome.result, outcome, performance.now() - clock, where, outcome.streamedLogs && byId('console').childNodes.length > 0)
  } catch (error) {
    byId('result').className = 'result error'
    byId('result').textContent = error instanceof Error ? error.message : String(error)
    setStatus('failed', h('span', { class: 'kind', 'data-testid': 'failure-kind' }, 'unreachable'), 'the server could not run the program')
    void refreshServer()
  } finally {
    clearInterval(ticker)
    clearTimeout(redraw)
    if (frame !== 0) cancelAnimationFrame(frame)
    draw(true)
    if (calls.size === 0) replaceChildren(byId('timeline'), h('p', { class: 'hint small' }, 'No sub-calls: the program called no tools.'))
    state.running = undefined
    byId<HTMLButtonElement>('run').disabled = (state.mode as ToolPresentationMode) === 'native'
    byId<HTMLButtonElement>('abort').disabled = true
  }
}

function abort(): void {
  state.running?.abort(new Error('aborted from the playground'))
}

// ───────────────────────── native calls ─────────────────────────

const argsEditor = createJsonEditor(byId('args-editor'), '{}', () => void callTool())

function selectNativeTool(name: string): void {
  const schema = registry.schemas().find((s) => s.name === name)
  byId('native-description').textContent = schema?.description ?? ''
  argsEditor.setText(JSON.stringify(exampleArguments(name, schema?.parameters), null, 2))
}

async function callTool(): Promise<void> {
  const name = byId<HTMLSelectElement>('native-tool').value
  let args: JsonValue
  try {
    args = JSON.parse(argsEditor.text()) as JsonValue
  } catch (error) {
    clearOutput()
    setStatus('failed', h('span', { class: 'kind', 'data-testid': 'failure-kind' }, 'JSON'), 'the arguments are not valid JSON')
    byId('result').textContent = error instanceof Error ? error.message : String(error)
    return
  }
  clearOutput()
  const where = state.where
  setStatus('running', `Calling ${name} ${where === 'server' ? 'on the server' : 'in this tab'}…`)
  const clock = performance.now()
  const runner = backend()
  const mode = (): 'parallel' | 'exclusive' => {
    try {
      return registry.executionMode({ name, arguments: args, agent: state.mode })
    } catch {
      // Not resolvable for this agent: the fail-closed class.
      return 'exclusive'
    }
  }
  // A call that waits for a person shows its card with Allow / Deny until it returns.
  const approvals: ApprovalListener = {
    approval(request) {
      const record: SubCallRecord = { subCallId: request.callId, name, arguments: args, start: 0, mode: mode(), approval: pendingState(request) }
      replaceChildren(byId('cards'), cardWithApproval(record, true, runner.decide))
      setStatus('running', `${name} waits for your approval ${where === 'server' ? 'on the server' : 'in this tab'}…`)
    },
    approvalSettled() {
      // The call's result follows and replaces the card.
    },
  }
  try {
    const result = await runner.execute(name, args, state.mode, AbortSignal.timeout(600_000), approvals)
    const elapsed = performance.now() - clock
    const box = byId('result')
    box.textContent = showJson(result)
    if (result.isError) {
      box.className = 'result error'
      const code = result.error.info?.code ?? 'ERROR'
      // A call a person, a policy or a timeout said no to did not fail: its card says "denied" too.
      const denied = isDenialCode(code)
      setStatus(
        denied ? 'denied' : 'failed',
        h('span', { class: 'kind', 'data-testid': 'failure-kind' }, code),
        `${name} ${denied ? 'was denied' : 'failed'} ${where === 'server' ? 'on the server' : 'in this tab'}`,
        h('span', { class: 'stats' }, `${elapsed.toFixed(0)} ms`),
      )
    } else {
      setStatus('ok', `✓ ${name} returned ${where === 'server' ? 'on the server' : 'in this tab'}`, h('span', { class: 'stats' }, `${elapsed.toFixed(0)} ms`))
    }
    replaceChildren(byId('timeline'), h('p', { class: 'hint small' }, 'A native call has no sub-calls; its card is below.'))
    replaceChildren(byId('cards'), renderNativeCard(name, args, result, registry.get(name), elapsed, mode()))
  } catch (error) {
    setStatus('failed', h('span', { class: 'kind', 'data-testid': 'failure-kind' }, 'unreachable'), 'the server could not be reached')
    byId('result').textContent = error instanceof Error ? error.message : String(error)
  }
}

// ───────────────────────── wiring ─────────────────────────

async function refreshServer(): Promise<void> {
  state.server = await checkServer(info)
  renderServerStatus()
}

function wire(): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-mode]')) {
    button.addEventListener('click', () => {
      state.mode = button.dataset.mode as ToolPresentationMode
      if (state.mode === 'native') state.work = 'native'
      if (state.mode === 'code') state.work = 'code'
      applyMode()
      applyWork()
    })
  }
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-where]')) {
    button.addEventListener('click', () => {
      state.where = button.dataset.where as Where
      restoreServer = false
      saveWhere(state.where)
      applyWhere()
    })
  }
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-tab]')) {
    button.addEventListener('click', () => {
      state.left = button.dataset.tab as LeftTab
      applyLeft()
    })
  }
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-work]')) {
    button.addEventListener('click', () => {
      state.work = button.dataset.work as WorkTab
      applyWork()
    })
  }
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-sdk]')) {
    button.addEventListener('click', () => {
      state.sdk = button.dataset.sdk as SdkLanguage
      renderSdk()
    })
  }
  wireCatalogSearch({ registry, server: info, where: () => state.where, agent: () => 'code' })
  const examples = byId<HTMLSelectElement>('examples')
  const examplesOf = (language: ProgramLanguage): readonly Example[] => (language === 'python' ? PYTHON_EXAMPLES : EXAMPLES)
  const loadExample = (example: Example): void => {
    editor.setText(example.code)
    if (example.budgets !== undefined && state.where === 'server') tabBudgets = example.budgets
    else if (example.budgets !== undefined) {
      byId<HTMLInputElement>('budget-compute').value = String(example.budgets.computeMs)
      byId<HTMLInputElement>('budget-wall').value = String(example.budgets.maxWallMs)
    }
  }
  const listExamples = (): void => {
    replaceChildren(examples, examplesOf(state.language).map((example, index) => h('option', { value: index, title: example.description }, example.title)))
  }
  listExamples()
  examples.addEventListener('change', () => {
    const example = examplesOf(state.language)[Number(examples.value)]
    if (example !== undefined) loadExample(example)
  })
  // The language switch: the editor, its examples and the SDK tab follow it; the run sends it (run_code's `language`).
  const language = byId<HTMLSelectElement>('language')
  language.addEventListener('change', () => {
    state.language = language.value === 'python' ? 'python' : 'typescript'
    editor.setLanguage(state.language)
    listExamples()
    loadExample(examplesOf(state.language)[0]!)
    state.sdk = state.language
    renderSdk()
  })
  const latency = byId<HTMLSelectElement>('latency')
  const applyLatency = (): void => {
    const [min, max] = latency.value.split('-').map(Number)
    local.setLatency(min === undefined || max === undefined || !(max > 0) ? undefined : [min, max])
  }
  latency.addEventListener('change', applyLatency)
  applyLatency()
  const planApproval = byId<HTMLSelectElement>('plan-approval')
  const applyPlanApproval = (): void => local.setPlanApproval(planApproval.value === 'plan')
  planApproval.addEventListener('change', applyPlanApproval)
  applyPlanApproval()
  byId('run').addEventListener('click', () => void run())
  byId('abort').addEventListener('click', abort)
  byId('call').addEventListener('click', () => void callTool())
  const select = byId<HTMLSelectElement>('native-tool')
  replaceChildren(select, registry.schemas().map((schema) => h('option', { value: schema.name }, schema.name)))
  select.addEventListener('change', () => selectNativeTool(select.value))
  selectNativeTool(select.value)
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.metaKey || event.ctrlKey) && !event.defaultPrevented) {
      event.preventDefault()
      if (state.work === 'code') void run()
      else void callTool()
    }
  })
}

wire()
renderCatalog()
applyMode()
applyWhere()
applyLeft()
applyWork()
renderServerStatus()
void refreshServer()
// The first run should not pay for loading the worker.
void local.warm()
document.documentElement.dataset.ready = 'true'
