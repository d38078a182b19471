/**
 * The browser's preflight thread (a module Web Worker): the TypeScript compiler and its lib files,
 * fetched from the `lib` base URL in this script's query, served by `servePreflightThread`.
 * @module
 */
import { createInlinePreflightEngine, type TypeScriptLoad } from '../../src/preflight/inline-engine.js'
import { servePreflightThread } from '../../src/preflight/threaded-engine.js'
import type { TypeScriptModule } from '../../src/preflight/typescript-checker.js'
// Static: this worker exists to run the compiler, and a dynamic import is rewritten by
// some dev servers (vitest's browser mode) into a helper a worker does not have.
import * as compiler from 'typescript'

/** Lib files fetched at most (es2022 references about 40). */
const MAX_LIB_FILES = 100

async function fetchLibs(base: URL): Promise<Map<string, string>> {
  const libs = new Map<string, string>()
  const queue = ['lib.es2022.d.ts']
  while (queue.length > 0 && libs.size < MAX_LIB_FILES) {
    const name = queue.shift()!
    if (libs.has(name)) continue
    const response = await fetch(new URL(name, base))
    if (!response.ok) throw new Error(`the compiler's lib file ${name} could not be fetched (HTTP ${response.status})`)
    const text = await response.text()
    libs.set(name, text)
    for (const match of text.matchAll(/<reference lib="([a-z0-9.]+)"/gi)) queue.push(`lib.${match[1]!.toLowerCase()}.d.ts`)
  }
  return libs
}

async function load(): Promise<TypeScriptLoad> {
  const base = new URL(self.location.href).searchParams.get('lib')
  if (base === null) throw new Error('no lib base URL was given to the preflight worker')
  const libs = await fetchLibs(new URL(base, self.location.href))
  const loaded = compiler as unknown as TypeScriptModule & { default?: TypeScriptModule }
  const ts = typeof loaded.createProgram === 'function' ? loaded : (loaded.default as TypeScriptModule)
  return { ts, readLib: (name) => libs.get(name) }
}

const engine = createInlinePreflightEngine({ load })
const warm = engine.analyze({ program: '', language: 'typescript', declarations: '' })
const serve = servePreflightThread((message) => self.postMessage(message), (request) => engine.analyze(request), warm)
self.addEventListener('message', (event: MessageEvent) => serve(event.data))
