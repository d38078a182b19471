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
const { store } = await openPostgresStore(databaseUrl!)
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
console.log(JSON.stringify({ url: started.url, pid: process.pid }))
