/**
 * The Node sandbox threads' V8 code cache (issue 34): each thread compiles its thread file through a
 * loader that takes the cache the process keeps for that file. The cache is code, so the process
 * takes it only from a thread that has been sent no program, once, as the first answer to its ask;
 * a thread's word after a program may have run is never kept. Real threads, real thread file.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Script } from 'node:vm'
import { afterAll, describe, expect, it } from 'vitest'
import { oneThreadRun } from '../../support/one-thread-run.js'
import { keptCodeCache, THREAD_SCRIPT_HEAD, THREAD_SCRIPT_TAIL } from '../../../platforms/node/sandbox-runtime.js'

const dir = mkdtempSync(join(tmpdir(), 'toolyard-code-cache-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
// The thread file and its stripper, copied: the process keeps images and caches per thread file, and
// other test files in this process may have run threads of the package's own.
for (const file of ['_sandbox-thread.cjs', '_sandbox-strip.cjs']) copyFileSync(new URL(`../../../platforms/node/${file}`, import.meta.url), join(dir, file))
const THREAD_URL = pathToFileURL(join(dir, '_sandbox-thread.cjs'))

/** Whether V8 takes `cache` for the thread file at `url`, compiled as the threads' loader compiles it. */
function v8Takes(url: URL, cache: Uint8Array): boolean {
  const file = fileURLToPath(url)
  const script = new Script(THREAD_SCRIPT_HEAD + readFileSync(file, 'utf8') + THREAD_SCRIPT_TAIL, { filename: file, cachedData: cache })
  return script.cachedDataRejected === false
}

describe('the sandbox threads’ code cache', () => {
  it('is taken from the first thread that restored the image before any program, and V8 takes it for the thread file', async () => {
    // The process's first thread boots its VM (no image yet): it is not asked, its boot differs from the later threads'.
    expect(await oneThreadRun(THREAD_URL)).toBe(1)
    expect(keptCodeCache(THREAD_URL)).toBeUndefined()
    // The next thread restores the image; it is asked at its first `ready` and answers before it reads its run.
    expect(await oneThreadRun(THREAD_URL)).toBe(1)
    const cache = keptCodeCache(THREAD_URL)
    expect(cache?.length).toBeGreaterThan(10_000)
    expect(v8Takes(THREAD_URL, cache!)).toBe(true)
    // Later threads load the file from it, and run TypeScript (the stripper beside the file) as before.
    expect(await oneThreadRun(THREAD_URL, 'const n: number = 2\nreturn n')).toBe(2)
    expect(await oneThreadRun(THREAD_URL)).toBe(1)
    expect(keptCodeCache(THREAD_URL)).toEqual(cache)
  }, 60_000)

  it('never keeps what a thread says once it has been sent a program', async () => {
    // A thread file that, given its first run, answers a code-cache ask nobody sent: as a thread whose realm a program reached could.
    const forger = join(dir, 'forger.cjs')
    writeFileSync(
      forger,
      `"use strict";
const { parentPort } = require('node:worker_threads')
let forged = false
parentPort.on('message', (message) => {
  if (forged || message === null || typeof message !== 'object' || message.type !== 'run') return
  forged = true
  parentPort.postMessage({ type: 'code-cache', bytes: new Uint8Array(4096).fill(0x42) })
})
require(${JSON.stringify(fileURLToPath(THREAD_URL))})
`,
    )
    const url = pathToFileURL(forger)
    // Not asked (no image at its boot): its forged answer is dropped.
    expect(await oneThreadRun(url)).toBe(1)
    expect(keptCodeCache(url)).toBeUndefined()
    // Asked: the loader's answer, sent before the run was read, is the one kept; the forged one after it is not.
    for (let i = 0; i < 3; i++) expect(await oneThreadRun(url)).toBe(1)
    const kept = keptCodeCache(url)
    expect(kept).toBeDefined()
    expect(kept!.every((byte) => byte === 0x42)).toBe(false)
    expect(v8Takes(url, kept!)).toBe(true)
  }, 60_000)
})
