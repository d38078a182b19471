/**
 * A fresh Node sandbox thread reaches its first result without a full (mark-compact) collection
 * (issue 34): with the thread's heap capped at 64 MiB, V8's first full-collection threshold was low
 * enough that instantiating the first VM (16 MiB of wasm memory, counted against it) crossed it in
 * many fresh threads, a 7-33 ms pause on a fresh runtime's first run (whether a thread's first old-space
 * page past that threshold came before or after the VM depended on how its first scavenge went,
 * so on the load). Real threads, from the real thread file, each wrapped by a probe that counts
 * the major collections up to its first result and a little old-generation growth right after.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import { nodeSandboxPlatform } from '../../../platforms/node/sandbox-runtime.js'

const THREAD_FILE = fileURLToPath(new URL('../../../platforms/node/_sandbox-thread.cjs', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'toolyard-boot-gc-'))
const log = join(dir, 'majors.log')
const probe = join(dir, 'probe.cjs')

// The probe: counts the thread's major collections (perf_hooks 'gc' entries) that started up to its
// first result (the first VM string it posts) and the growth after it, and appends the count to
// `log` a little later (the observer is told after a collection, not during it).
writeFileSync(
  probe,
  `"use strict";
const fs = require('node:fs')
const { PerformanceObserver, constants, performance } = require('node:perf_hooks')
const { parentPort } = require('node:worker_threads')
const majors = []
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(entry.startTime)
}).observe({ entryTypes: ['gc'] })
const post = parentPort.postMessage
let resultAt
const kept = []
parentPort.postMessage = function (message, transfer) {
  if (resultAt === undefined && typeof message === 'string') {
    // The old generation grows by a few of its pages now (two 512 KiB arrays, kept), with the VM's
    // wasm memory allocated: whether that growth needs a full collection does not depend on how a
    // collection before it happened to lay the heap out.
    kept.push(new Array(65536).fill(0), new Array(65536).fill(0))
    resultAt = performance.now()
    setTimeout(() => fs.appendFileSync(${JSON.stringify(log)}, majors.filter((at) => at < resultAt).length + '\\n'), 50)
  }
  return post.call(this, message, transfer)
}
require(${JSON.stringify(THREAD_FILE)})
`,
)

afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The counts the probes wrote so far, one a thread. */
function lines(): number[] {
  try {
    return readFileSync(log, 'utf8').trim().split('\n').filter((line) => line !== '').map(Number)
  } catch {
    return []
  }
}

/** Resolves once `count` probes have written their counts. */
async function probed(count: number): Promise<void> {
  while (lines().length < count) await new Promise((resolve) => setTimeout(resolve, 10))
}

describe('a fresh Node sandbox thread’s boot', () => {
  it('reaches its first result without a full collection', async () => {
    const platform = nodeSandboxPlatform(pathToFileURL(probe))
    // The first runtime's thread boots its VM and, as it ends, gives the process the image the later threads restore.
    for (let i = 0; i < 9; i++) {
      const runtime = createSandboxRuntimeOn(platform, { maxConcurrentRuns: 1 })
      expect((await runtime.run({ program: 'return 1', bindings: [] })).value).toBe(1)
      // The probe writes 50 ms after the result (later on a loaded machine); the thread must live until then.
      await probed(i + 1)
      await runtime.dispose()
    }
    const majors = lines()
    expect(majors).toHaveLength(9)
    expect(majors).toEqual(majors.map(() => 0))
  }, 60_000)
})
