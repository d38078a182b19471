/**
 * The Node sandbox threads' code cache at its edges (mutation testing, stop 55: the host side of
 * platforms/node/sandbox-runtime.ts). Each thread file here is a probe that logs the code cache
 * its thread was handed, can alter the thread's answer to the host's ask (as a thread whose realm
 * a program reached could), then loads the real thread file. Real threads, real thread file.
 * - An asked thread that never answers frees the ask when it ends: a later thread is asked.
 * - An empty answer, or one over 4 MiB, is not kept (and the next thread is asked); one of
 *   exactly 4 MiB is kept, and every later thread is handed the kept cache.
 * - `keptCodeCache` is a copy; a thread posting `null` does not break the host.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { oneThreadRun } from '../../support/one-thread-run.js'
import { keptCodeCache } from '../../../platforms/node/sandbox-runtime.js'

const dir = mkdtempSync(join(tmpdir(), 'toolyard-code-cache-edges-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const THREAD = fileURLToPath(new URL('../../../platforms/node/_sandbox-thread.cjs', import.meta.url))
const MAX = 4 * 1024 * 1024

type Mode = 'pass' | 'drop' | 'empty' | 'over' | 'max' | 'null'

/** A probe thread file (its own URL: the process keeps images and caches per thread file). */
function probe(name: string) {
  const file = join(dir, `${name}.cjs`)
  const log = join(dir, `${name}.log`)
  const mode = join(dir, `${name}.mode`)
  writeFileSync(log, '')
  writeFileSync(mode, 'pass')
  writeFileSync(
    file,
    `"use strict";
const { parentPort, workerData } = require('node:worker_threads')
const { appendFileSync, readFileSync } = require('node:fs')
appendFileSync(${JSON.stringify(log)}, String(workerData.codeCache === undefined ? -1 : workerData.codeCache.length) + '\\n')
const mode = readFileSync(${JSON.stringify(mode)}, 'utf8')
if (mode === 'null') parentPort.postMessage(null)
const post = parentPort.postMessage.bind(parentPort)
parentPort.postMessage = (message, ...rest) => {
  if (message !== null && typeof message === 'object' && message.type === 'code-cache') {
    if (mode === 'drop') return
    if (mode === 'empty') return post({ type: 'code-cache', bytes: new Uint8Array(0) })
    if (mode === 'over') return post({ type: 'code-cache', bytes: new Uint8Array(${MAX} + 1) })
    if (mode === 'max') return post({ type: 'code-cache', bytes: new Uint8Array(${MAX}) })
  }
  return post(message, ...rest)
}
require(${JSON.stringify(THREAD)})
`,
  )
  const url = pathToFileURL(file)
  return {
    url,
    /** The code cache length each thread was handed, in order (-1: none). */
    handed: (): number[] => readFileSync(log, 'utf8').split('\n').filter((line) => line !== '').map(Number),
    /** One fresh one-thread runtime on the probe, its thread answering as `how` says; then disposed. */
    run(how: Mode, program = 'return 1'): Promise<unknown> {
      writeFileSync(mode, how)
      return oneThreadRun(url, program)
    },
  }
}

describe('the sandbox threads’ code cache, at its edges', () => {
  it('an asked thread that never answers frees the ask when it ends: the next thread is asked, its answer kept', async () => {
    const p = probe('silent')
    // The first thread boots with no image: not asked.
    expect(await p.run('pass')).toBe(1)
    // Asked, it answers nothing.
    expect(await p.run('drop')).toBe(1)
    expect(keptCodeCache(p.url)).toBeUndefined()
    // Before: had the ask stayed taken, no thread of this file would be asked again.
    expect(await p.run('pass')).toBe(1)
    expect(keptCodeCache(p.url)?.length).toBeGreaterThan(0)
  }, 60_000)

  it('an empty answer and one over 4 MiB are not kept; one of exactly 4 MiB is, and later threads are handed it', async () => {
    const p = probe('sizes')
    expect(await p.run('pass')).toBe(1)
    expect(await p.run('empty')).toBe(1)
    expect(keptCodeCache(p.url)).toBeUndefined()
    expect(await p.run('over')).toBe(1)
    expect(keptCodeCache(p.url)).toBeUndefined()
    expect(await p.run('max')).toBe(1)
    expect(keptCodeCache(p.url)?.length).toBe(MAX)
    // The next thread is handed the kept cache (V8 rejects these zeros and compiles the file as without one).
    expect(await p.run('pass', 'return 2')).toBe(2)
    expect(p.handed()).toEqual([-1, -1, -1, -1, MAX])
  }, 60_000)

  it('keptCodeCache answers a copy: writing into it changes nothing kept', async () => {
    const p = probe('copy')
    expect(await p.run('pass')).toBe(1)
    expect(await p.run('pass')).toBe(1)
    const first = keptCodeCache(p.url)!
    const before = first.slice()
    first.fill(0x42)
    expect(keptCodeCache(p.url)).toEqual(before)
  }, 60_000)

  it('a thread that posts null is ignored: its runs and the cache are unaffected', async () => {
    const p = probe('nulls')
    expect(await p.run('null')).toBe(1)
    expect(await p.run('null')).toBe(1)
    expect(keptCodeCache(p.url)?.length).toBeGreaterThan(0)
  }, 60_000)
})
