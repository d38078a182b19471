/**
 * `npm start`: the local toolyard server. The HTTP API over the demo tools (mode
 * `both`, Code Mode in the sandbox: QuickJS in pooled worker threads, compute 5 s and
 * wall clock 60 s a run; `write_file` and `edit_file` ask a person through an approval
 * broker; each program is type-checked against the tools' SDK in a thread beside its run,
 * preflight `'warn'`), the playground's static files when `demo/dist/` exists, on
 * 127.0.0.1 with two bearer tokens: the API token (`run`: agents and scripts) and the
 * playground's (`run` + `approve`: the person), kept in the data directory's
 * `tokens.json` (start-tokens.ts). `npm start` keeps pending approvals
 * in a file store in `TOOLYARD_DATA_DIR` (default `.toolyard/` in the working directory),
 * so they survive a crash or a restart (docs/durability.md).
 *
 * The page receives the playground's token same-origin, injected into a `<meta name="toolyard-token">`
 * tag of `GET /`: another origin cannot read that response (no CORS), cannot frame it
 * (`frame-ancestors 'none'`), and cannot reach it through DNS rebinding (the server
 * refuses any `Host` but its own names).
 *
 * @module
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { serveStatic } from '@hono/node-server/serve-static'
import type { Hono } from 'hono'
import { askBeforeWriting } from '../demo/tools/approval-gate.js'
import { registerDemoTools } from '../demo/tools/index.js'
import { createFileStore, createPreflightWorker, createSandboxRuntime, serve } from '../platforms/node/index.js'
import type { SandboxRuntime, ServedApp } from '../platforms/node/index.js'
import type { ApprovalBroker } from '../src/approvals/index.js'
import type { DurableStore } from '../src/durable/index.js'
import { createToolsApp } from '../src/http/index.js'
import { createToolRuntime } from '../src/registry/index.js'
import { ToolError } from '../src/errors.js'
import type { ToolRuntime } from '../src/runtime-types.js'
import { startOtel } from './start-otel.js'
import { openPostgresStore } from './start-postgres.js'
import { loadStartTokens, UNAUTHORIZED_HINT } from './start-tokens.js'

/** Options of {@link startServer}. */
export interface StartServerOptions {
  /** Default: `PORT` from the environment, else 8787. 0 picks a free port. */
  readonly port?: number
  /**
   * The playground's token (`run` + `approve`: the person; injected into the page). Default
   * `TOOLYARD_APPROVER_TOKEN`, else the one kept in `dataDir`'s `tokens.json`, else 32
   * random bytes as hex.
   */
  readonly token?: string
  /** The API token (`run` only: agents and scripts). Default `TOOLYARD_TOKEN`, else `tokens.json`, else random. */
  readonly apiToken?: string
  /** The playground's built files; default the first `demo/dist/` found above this file. */
  readonly staticDir?: string | null
  /** How long a pending approval (`write_file`, `edit_file`) waits for Allow / Deny, in ms. Default 5 minutes. */
  readonly approvalTimeoutMs?: number
  /** `true`: a program whose planned tools ask is put to a person once, before it runs (docs/approvals.md, "Plan approval"). Default `false`. */
  readonly approvalPlans?: boolean
  /**
   * A directory for durable state (a file store, `createFileStore`): pending approvals live
   * there, so a restarted server lists them again and a decision reaches a call resumed
   * under the same id. Default `undefined`: in memory, lost with the process. `npm start`
   * passes `TOOLYARD_DATA_DIR`, else `.toolyard/` in the working directory. Runs that wait
   * for a person are kept there too (parked: docs/durability.md), with `/v1/runs` records
   * and the demo workspace's files: a restarted server resumes the runs and finishes them.
   */
  readonly dataDir?: string
  /**
   * The durable store to use instead of `dataDir`'s file store (`npm start` passes a
   * PostgreSQL store when `TOOLYARD_DATABASE_URL` is set: examples/start-postgres.ts).
   * `dataDir` then keeps only `tokens.json`.
   */
  readonly store?: DurableStore
  /**
   * With `dataDir`: how old another process's heartbeat must be before its runs count as
   * left behind and this server resumes them, and how often it looks
   * (`createToolRuntime({ runs: { staleMs, resumeEveryMs } })`). Defaults 30 000 and 10 000 ms.
   */
  readonly resumeStaleMs?: number
  readonly resumeEveryMs?: number
  /** How long a run waits for a person before it parks (its state goes to the store). Default the sandbox's, 1 000 ms. */
  readonly parkAfterMs?: number
}

/** A running `npm start` server. */
export interface StartedServer {
  readonly url: string
  readonly port: number
  /** The playground's token: `run` + `approve` (the person). */
  readonly token: string
  /** The API token: `run` (agents and scripts; it cannot list or decide approvals). */
  readonly apiToken: string
  /** Where the tokens are kept (`<dataDir>/tokens.json`), or `undefined` without a data directory. */
  readonly tokensFile: string | undefined
  /** The tool runtime behind the API (for scripts that add tools or listeners). */
  readonly runtime: ToolRuntime
  /** The Code Mode sandbox behind `run_code` (its budgets, its load). */
  readonly codeRuntime: SandboxRuntime
  /** The Python sandbox beside it: programs sent with `"language": "python"` run there (same budgets). */
  readonly pythonRuntime: SandboxRuntime
  /** The runtime's approval broker behind `/v1/approvals` (the writing tools ask it); over the store when one was given. */
  readonly approvals: ApprovalBroker
  /** The file store in `dataDir`, or `undefined` when the server keeps its state in memory. */
  readonly store: DurableStore | undefined
  /** Where the playground is served from, or `undefined` when it was not built. */
  readonly staticDir: string | undefined
  /** Aborts in-flight runs, drains them, disposes the runtime, the code runtime and the preflight thread, closes the server. Idempotent. */
  shutdown(): Promise<void>
}

const API_ROUTES: readonly (readonly [string, string])[] = [
  ['GET /v1/health', 'liveness (no token needed)'],
  ['GET /v1/tools?agent=', 'the visible tool schemas'],
  ['GET /v1/tools/:name?agent=', 'one tool with its output schema'],
  ['GET /v1/sdk?language=typescript|python&agent=', 'the Code Mode SDK as text (ETag)'],
  ['GET /v1/prompt?agent=', 'the assembled prompt: sections and wire tools'],
  ['POST /v1/tools/:name/execute', 'body { arguments, callId?, agent? } → the tool result'],
  ['POST /v1/run', 'body { code, description, agent?, language? } → run_code (JSON, or SSE with Accept: text/event-stream)'],
  ['GET /v1/approvals', 'the calls waiting for a person (write_file and edit_file ask); the playground token only'],
  ['POST /v1/approvals/:id', 'body { decision: "allow" | "deny", reason? } → answers one; the playground token only'],
  ['POST /mcp?agent=', 'the registry as an MCP server (Streamable HTTP, JSON-RPC; same tokens)'],
]

function findStaticDir(): string | undefined {
  // From examples/start.ts (tsx) the package root is one level up; from dist/examples/start.js, two.
  for (const relative of ['../demo/dist/', '../../demo/dist/']) {
    const dir = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(dir) && statSync(dir).isDirectory() && existsSync(join(dir, 'index.html'))) return dir
  }
  return undefined
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)
}

/**
 * The page is cross-origin isolated (COOP + COEP; every file it loads is same-origin):
 * the sandbox's workers then share memory with the page, so Abort stops a program that
 * computes at once instead of by replacing its worker.
 */
const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
}

function pageHeaders(): Record<string, string> {
  return {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "frame-ancestors 'none'",
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    ...ISOLATION_HEADERS,
  }
}

/** The budgets the page shows for runs on this server (the playground's Compute and Wall fields). */
type PageLimits = { readonly computeMs: number; readonly maxWallMs: number }

function tokenMeta(token: string, limits?: PageLimits): string {
  const shown = limits === undefined ? '' : `\n    <meta name="toolyard-limits" content="${escapeHtml(JSON.stringify({ computeMs: limits.computeMs, maxWallMs: limits.maxWallMs }))}" />`
  return `<meta name="toolyard-token" content="${escapeHtml(token)}" />\n    <meta name="toolyard-api" content="/v1" />${shown}`
}

function injectToken(html: string, token: string, limits: PageLimits): string {
  const meta = tokenMeta(token, limits)
  return /<\/head>/i.test(html) ? html.replace(/<\/head>/i, `    ${meta}\n  </head>`) : `${meta}\n${html}`
}

function infoPage(url: string, token: string, apiToken: string): string {
  const rows = API_ROUTES.map(([route, what]) => `<tr><td><code>${escapeHtml(route)}</code></td><td>${escapeHtml(what)}</td></tr>`).join('\n')
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    ${tokenMeta(token)}
    <title>toolyard</title>
    <style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}td{padding:.2rem .8rem .2rem 0;vertical-align:top}code,pre{font-family:ui-monospace,monospace}pre{background:#8881;padding:.8rem;overflow:auto}</style>
  </head>
  <body>
    <h1>toolyard</h1>
    <p>The playground is not built (no <code>demo/dist/</code>), so this page lists the HTTP API instead. See <code>docs/http-api.md</code>.</p>
    <table>${rows}</table>
    <p>Every route but <code>/v1/health</code> needs a token printed on the console, as a bearer token (the API token runs programs; deciding approvals needs the playground's):</p>
    <pre>curl -H "Authorization: Bearer ${escapeHtml(apiToken)}" ${escapeHtml(url)}/v1/tools</pre>
    <pre>curl -H "Authorization: Bearer ${escapeHtml(apiToken)}" -H "Content-Type: application/json" \\
  -d '{"code":"return 1 + 1","description":"add"}' ${escapeHtml(url)}/v1/run</pre>
  </body>
</html>
`
}

function addPages(app: Hono, staticDir: string | undefined, tokens: { readonly page: string; readonly api: string }, url: () => string, limits: PageLimits): void {
  const index = (): Response => {
    const html = staticDir === undefined ? infoPage(url(), tokens.page, tokens.api) : injectToken(readFileSync(join(staticDir, 'index.html'), 'utf8'), tokens.page, limits)
    return new Response(html, { status: 200, headers: pageHeaders() })
  }
  app.get('/', index)
  app.get('/index.html', index)
  if (staticDir !== undefined) {
    // Before serveStatic, which answers without calling next(): headers set after it would never apply.
    app.use('/*', async (c, next) => {
      await next()
      c.res.headers.set('X-Content-Type-Options', 'nosniff')
      for (const [name, value] of Object.entries(ISOLATION_HEADERS)) c.res.headers.set(name, value)
    })
    app.use('/*', serveStatic({ root: staticDir }))
  }
}

/** `PORT` as `npm start` reads it: absent or empty → the default; else a whole number from 0 to 65535 (0: a free port). */
export function portFromEnv(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined
  const digits = value.trim()
  if (!/^\d{1,5}$/.test(digits) || Number(digits) > 65_535) {
    throw new ToolError('INVALID_OPTIONS', `PORT must be a whole number from 0 to 65535 (got ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}); PORT=9000 npm start listens on port 9000`)
  }
  return Number(digits)
}

/**
 * What `npm start` prints for a start-up failure a person can fix (a bad \`PORT\`, a port
 * already taken), without a stack; `undefined` for anything else (printed in full).
 */
export function startFailureMessage(error: unknown): string | undefined {
  const { code, port, message } = (error ?? {}) as { code?: unknown; port?: unknown; message?: unknown }
  if (code === 'EADDRINUSE') {
    return `port ${typeof port === 'number' ? port : '?'} is already in use on 127.0.0.1 (another server, or another npm start): stop it, or pick another port: PORT=9000 npm start`
  }
  if (error instanceof ToolError && code === 'INVALID_OPTIONS') return String(message)
  return undefined
}

/**
 * Starts the server `npm start` runs (exported so tests and other scripts can start it
 * in-process).
 */
export async function startServer(options: StartServerOptions = {}): Promise<StartedServer> {
  const port = options.port ?? portFromEnv(process.env.PORT) ?? 8787
  const kept = options.token !== undefined && options.apiToken !== undefined ? undefined : loadStartTokens(options.dataDir, process.env)
  const token = options.token ?? kept!.playground
  const apiToken = options.apiToken ?? kept!.api
  // The agent's token runs; the person's also decides. Neither is admin: nobody reads or cancels another's runs.
  const tokens = [
    { token: apiToken, roles: ['run'], id: 'api' },
    { token, roles: ['run', 'approve'], id: 'playground' },
  ] as const
  const staticDir = options.staticDir === null ? undefined : (options.staticDir ?? findStaticDir())

  // The sandbox with its defaults: a runaway program answers within 5 s of compute (60 s
  // of wall clock), and at most a machine-sized number of programs run at once; beyond
  // that, runs queue, then are refused with 503 OVERLOADED.
  const codeRuntime = createSandboxRuntime(options.parkAfterMs === undefined ? {} : { parkAfterMs: options.parkAfterMs })
  // Python programs (`"language": "python"`) run in MicroPython threads with the same budgets.
  const pythonRuntime = createSandboxRuntime({ language: 'python' })
  // Preflight 'warn': each program is type-checked against the tools' SDK in a thread beside
  // its run; mistakes are appended to what the caller reads after the run.
  const preflightEngine = createPreflightWorker()
  // With a data directory, runs waiting for a person and their approvals live in its file store: they outlive a crash.
  const store = options.store ?? (options.dataDir === undefined ? undefined : createFileStore(options.dataDir))
  const approvals = { ...(options.approvalTimeoutMs === undefined ? {} : { timeoutMs: options.approvalTimeoutMs }), plans: options.approvalPlans === true }
  // With OTEL_EXPORTER_OTLP_ENDPOINT: traces and metrics over OTLP/HTTP (docs/observability.md).
  const otel = await startOtel()
  // Runs another process left in the store (it stopped, or died mid-wait) are resumed once the app is up, and every little while.
  const runs = { ...(options.resumeStaleMs === undefined ? {} : { staleMs: options.resumeStaleMs }), ...(options.resumeEveryMs === undefined ? {} : { resumeEveryMs: options.resumeEveryMs }) }
  const runtime = createToolRuntime({ mode: 'both', codeRuntime, codeRuntimes: [pythonRuntime], preflightEngine, approvals, runs, ...(store === undefined ? {} : { store }), ...(otel === undefined ? {} : { telemetry: otel.telemetry }) })
  registerDemoTools(runtime, store === undefined ? {} : await durableWorkspace(store))
  // The writing tools ask a person: the playground shows Allow / Deny, API clients use /v1/approvals.
  askBeforeWriting(runtime)
  // The thread loads the compiler on its first check (seconds): start it now. A check never rejects.
  void runtime.preflight({ code: 'return 1' }).catch(() => undefined)
  // One agent per presentation mode, so the playground can preview each mode's prompt.
  for (const mode of ['native', 'code', 'both'] as const) runtime.agent(mode).presentAs(mode)

  const stopping = new AbortController()
  // MCP clients (Streamable HTTP) at /mcp, same tokens; `?agent=` picks a layer.
  const mcp = { agent: (request: Request) => new URL(request.url).searchParams.get('agent') ?? undefined }
  const app = createToolsApp(runtime, { tokens, unauthorizedHint: UNAUTHORIZED_HINT, signal: stopping.signal, mcp })
  const disposeAll = async (): Promise<void> => {
    // The runtime first: parked durable runs and their approvals stay in the store for the next process.
    await runtime.dispose()
    await codeRuntime.dispose()
    await pythonRuntime.dispose()
    await preflightEngine.dispose()
    await otel?.shutdown()
  }
  let served: ServedApp | undefined
  addPages(app, staticDir, { page: token, api: apiToken }, () => served?.url ?? '', codeRuntime.limits)
  try {
    served = await serve(app, { port, hostname: '127.0.0.1' })
  } catch (error) {
    await disposeAll()
    throw error
  }
  const server = served
  let finished: Promise<void> | undefined
  const shutdown = (): Promise<void> => {
    finished ??= (async () => {
      await disposeAll()
      stopping.abort(new DOMException('the server is shutting down', 'AbortError'))
      const closed = server.close()
      let timer: ReturnType<typeof setTimeout> | undefined
      // A client holding a connection open must not keep the process alive forever.
      await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, 3000)))])
      clearTimeout(timer)
    })()
    return finished
  }

  return { url: server.url, port: server.port, token, apiToken, tokensFile: kept?.file, runtime, codeRuntime, pythonRuntime, approvals: runtime.approvals!, store, staticDir, shutdown }
}

/**
 * The demo workspace over `store`: its files are read back at start and written through
 * after every change (one JSON value; the demo's files are small), so a restart, or a
 * `kill -9`, keeps what the tools wrote.
 */
async function durableWorkspace(store: DurableStore): Promise<{ files?: Record<string, string>; onWorkspaceWrite: (files: ReadonlyMap<string, string>) => void }> {
  const key = 'demo/workspace'
  let files: Record<string, string> | undefined
  try {
    const entry = await store.get(key)
    const parsed: unknown = entry === undefined ? undefined : JSON.parse(entry.value)
    if (typeof parsed === 'object' && parsed !== null && Object.values(parsed).every((text) => typeof text === 'string')) files = parsed as Record<string, string>
  } catch {
    // A damaged record: start from the seed files.
  }
  let writes = Promise.resolve()
  return {
    ...(files === undefined ? {} : { files }),
    onWorkspaceWrite: (current) => {
      const text = JSON.stringify(Object.fromEntries(current))
      writes = writes.then(() => store.put(key, text)).then(
        () => undefined,
        (error: unknown) => console.error('saving the workspace failed:', error),
      )
    },
  }
}

/** `npm start` after its builds (scripts/start.mjs): the server on PORT with the tokens and data of TOOLYARD_DATA_DIR, its banner, and Ctrl+C. */
export async function main(): Promise<void> {
  // Durable state (pending approvals) in TOOLYARD_DATA_DIR, else .toolyard/ here (git-ignored).
  const dataDir = resolve(process.env.TOOLYARD_DATA_DIR || '.toolyard')
  // With TOOLYARD_DATABASE_URL, runs, approvals and events live in PostgreSQL, shared by every instance on it.
  const databaseUrl = process.env.TOOLYARD_DATABASE_URL
  const database = databaseUrl ? await openPostgresStore(databaseUrl) : undefined
  let started: StartedServer
  try {
    started = await startServer({ dataDir, ...(database === undefined ? {} : { store: database.store }) })
  } catch (error) {
    const message = startFailureMessage(error)
    if (message === undefined) throw error
    await database?.close()
    console.error(`\n  npm start: ${message}\n`)
    process.exit(1)
  }
  const lines = [
    '',
    `  toolyard is listening on ${started.url}`,
    `  API token (run: agents and scripts): ${started.apiToken}`,
    `  playground token (run + approve: the person; the page gets it itself): ${started.token}`,
    `  tokens: kept in ${started.tokensFile ?? '(memory)'} and reused at the next start; TOOLYARD_TOKEN / TOOLYARD_APPROVER_TOKEN override them`,
    started.staticDir === undefined
      ? '  (playground not built: GET / lists the API routes)'
      : `  playground: ${started.url}/ (serving ${started.staticDir})`,
    `  approvals: write_file and edit_file wait for Allow / Deny (the playground, or GET/POST /v1/approvals with the playground token; ${started.approvals.timeoutMs / 1000} s to decide)`,
    database === undefined
      ? `  data: runs waiting for a person, pending approvals and the workspace are kept in ${dataDir} (TOOLYARD_DATA_DIR) and survive a restart`
      : '  data: runs waiting for a person, pending approvals and the workspace are kept in PostgreSQL (TOOLYARD_DATABASE_URL), shared by every instance on it',
    `  Code Mode: TypeScript in a QuickJS sandbox, Python ("language": "python") in a MicroPython one; compute ${started.codeRuntime.limits.computeMs / 1000} s and wall clock ${started.codeRuntime.limits.maxWallMs / 1000} s a run, ` +
      `${started.codeRuntime.load().maxConcurrentRuns} runs at once (+${started.codeRuntime.load().maxQueuedRuns} queued)`,
    "  preflight: 'warn' (programs are type-checked against the tools' SDK in a thread; mistakes are appended after the run)",
    '',
    `  curl -H "Authorization: Bearer ${started.apiToken}" ${started.url}/v1/tools`,
    '',
    '  Ctrl+C stops the server.',
    '',
  ]
  console.log(lines.join('\n'))
  let signalled = false
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) {
      // A second Ctrl+C means "now".
      process.exit(130)
    }
    signalled = true
    console.log(`\n  ${signal}: shutting down — runs waiting for a person stay parked in ${dataDir} and resume at the next start; other in-flight runs are aborted…`)
    started.shutdown().then(
      () => (database === undefined ? undefined : database.close()),
    ).then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('shutdown failed:', error)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error)
    process.exit(1)
  })
}
