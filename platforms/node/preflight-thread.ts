/**
 * The preflight thread (`worker_threads`): the same analysis as the inline engine
 * (`analyzeProgram`: bounded plan, then the warm TypeScript checker), off the host's
 * main thread. It answers `{ id, result }` for each `{ id, program, language,
 * declarations }`; `declarations: null` means "the same as last time", so a 1,000-tool
 * SDK crosses once per change, not once per check. The compiler starts loading as soon
 * as the thread starts.
 *
 * @module
 */
import { parentPort } from 'node:worker_threads'
import { analyzeProgram, unavailableNote } from '../../src/preflight/analyze.js'
import { lazyChecker } from '../../src/preflight/inline-engine.js'
import { loadTypeScript } from './preflight-typescript.js'

const port = parentPort
const checker = lazyChecker(loadTypeScript)
void checker()
let declarations: string | undefined

port?.on('message', (message: unknown) => {
  void (async () => {
    if (typeof message !== 'object' || message === null) return
    const { id, program, language, declarations: sent } = message as Record<string, unknown>
    if (typeof id !== 'number' || typeof program !== 'string' || typeof language !== 'string') return
    if (typeof sent === 'string') declarations = sent
    else if (sent === undefined) declarations = undefined
    const needsChecker = language !== 'python' && declarations !== undefined
    const result = analyzeProgram({ program, language, declarations }, needsChecker ? await checker() : unavailableNote('not needed'))
    port.postMessage({ id, result })
  })()
})
