/**
 * A child process for the two-instance tests (two-instances.test.ts): the `npm start` server
 * on a PostgreSQL store (what `TOOLYARD_DATABASE_URL` selects), with an `effect` tool
 * that records each call in a table; a dead instance is one whose heartbeat
 * (every 5 s) is 12 s old: a shorter bound would take runs from a live one.
 *   server-child.ts <databaseUrl> <dataDir> <approverToken> <apiToken>   prints `{ "url": … }`, then serves until killed
 */
import pg from 'pg'
import { startServer } from '../../../examples/start.js'
import { openPostgresStore } from '../../../examples/start-postgres.js'
import { defineTool } from '../../../src/schema/define-tool.js'

const [databaseUrl, dataDir, token, apiToken] = process.argv.slice(2)
const opened = await openPostgresStore(databaseUrl!)
// TOOLYARD_TWO_TRACE=1: each write of a run's records, on stderr (the two-instance tests print it when a case fails).
const trace = process.env.TOOLYARD_TWO_TRACE === '1'
const traced = (key: string) => key.startsWith('runs/') || key.startsWith('calls/') || key.startsWith('run-records/')
const store = !trace
  ? opened.store
  : new Proxy(opened.store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown
        if ((name !== 'put' && name !== 'delete') || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value
        return async (key: string, ...rest: unknown[]) => {
          const result = (await (value as (...a: unknown[]) => Promise<{ ok: boolean }>).apply(target, [key, ...rest])) as { ok: boolean }
          if (traced(key)) {
            const body = name === 'put' ? String(rest[0]).slice(0, 160).replace(/"state":\{.*?\},/, '') : ''
            console.error(`[trace ${process.pid} ${Date.now()}] ${String(name)} ${key} ${JSON.stringify(rest[name === 'put' ? 1 : 0] ?? null)} -> ${result.ok} ${body}`)
          }
          return result
        }
      },
    })
const started = await startServer({ port: 0, token: token!, apiToken: apiToken!, staticDir: null, dataDir: dataDir!, store, resumeStaleMs: 12_000, resumeEveryMs: 250 })
// A side effect both instances see: one row per call actually made (the demo workspace is each process's memory).
const effects = new pg.Pool({ connectionString: databaseUrl!, max: 2 })
await effects.query('CREATE TABLE IF NOT EXISTS test_effects (tag text NOT NULL, at timestamptz NOT NULL DEFAULT now())')
started.runtime.register(
  defineTool({
    name: 'effect',
    description: 'Records a side effect in PostgreSQL.',
    parameters: { tag: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: async (args) => {
      await effects.query('INSERT INTO test_effects (tag) VALUES ($1)', [args.tag])
      return `did ${args.tag}`
    },
  }),
)
if (trace) {
  // Inside the durable wrapper: logs only the bodies that really run.
  started.runtime.on('tools/execute', async (call, next) => {
    console.error(`[trace ${process.pid} ${Date.now()}] body ${call.callId} ${call.name} start`)
    try {
      return await next()
    } finally {
      console.error(`[trace ${process.pid} ${Date.now()}] body ${call.callId} ${call.name} end`)
    }
  })
}
console.log(JSON.stringify({ url: started.url, pid: process.pid }))
