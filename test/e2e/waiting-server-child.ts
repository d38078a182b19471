/**
 * A child process for test/e2e/playground-waiting.e2e.test.ts: the `npm start` server with
 * the playground, on a data directory and a given port, so the test can kill it with
 * SIGKILL while a run waits for a person and start the next server on the same port (the
 * page keeps its origin).
 *   waiting-server-child.ts <dataDir> <token> <port> <staticDir>   prints `{ "url": … }`, then serves until killed
 */
import { startServer } from '../../examples/start.js'

const [dataDir, token, port, staticDir] = process.argv.slice(2)
const started = await startServer({ port: Number(port), token: token!, staticDir: staticDir!, dataDir: dataDir!, resumeStaleMs: 1_000, resumeEveryMs: 250 })
console.log(JSON.stringify({ url: started.url, pid: process.pid }))
