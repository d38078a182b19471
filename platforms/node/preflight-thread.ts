/**
 * The preflight thread (`worker_threads`): the same analysis as the inline engine
 * (`analyzeProgram`: bounded plan, then the warm TypeScript checker), off the host's main thread,
 * served by `servePreflightThread` (the wire is in `src/preflight/threaded-engine.ts`).
 * @module
 */
import { parentPort } from 'node:worker_threads'
import { createInlinePreflightEngine } from '../../src/preflight/inline-engine.js'
import { servePreflightThread } from '../../src/preflight/threaded-engine.js'
import { loadTypeScript } from './preflight-typescript.js'

const engine = createInlinePreflightEngine({ load: loadTypeScript })
// Warm the compiler before the first request arrives; the engine's check clocks start when it is loaded.
const warm = engine.analyze({ program: '', language: 'typescript', declarations: '' })
const port = parentPort
if (port !== null) port.on('message', servePreflightThread((message) => port.postMessage(message), (request) => engine.analyze(request), warm))
