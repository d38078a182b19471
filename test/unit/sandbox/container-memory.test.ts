import { spawnSync } from 'node:child_process'
import { accessSync, constants, mkdirSync, rmdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { usableMemoryMb } from '../../../platforms/node/sandbox-runtime.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const GiB = 1024 ** 3

/** Whether this process may create cgroup v1 memory groups (root on Linux with that controller mounted). */
function memoryCgroupsWritable(): boolean {
  try {
    accessSync('/sys/fs/cgroup/memory/cgroup.procs', constants.W_OK)
    return true
  } catch {
    return false
  }
}

describe("the Node sandbox's default concurrency in a container", () => {
  it('sizes by the container limit when it is below the machine, by the machine otherwise', () => {
    expect(usableMemoryMb(64 * GiB, 1 * GiB)).toBe(1024)
    // No limit: Node reports 0, undefined, or cgroup v1's "unlimited" (a number near 2^63).
    expect(usableMemoryMb(64 * GiB, 0)).toBe(65_536)
    expect(usableMemoryMb(64 * GiB, undefined)).toBe(65_536)
    expect(usableMemoryMb(64 * GiB, 9_223_372_036_854_771_712)).toBe(65_536)
    expect(usableMemoryMb(64 * GiB, 64 * GiB)).toBe(65_536)
  })

  it.skipIf(!memoryCgroupsWritable())('a process in a 512 MiB memory cgroup admits runs for its 512 MiB, not for the machine (needs a writable cgroup v1 memory controller)', () => {
    const cgroup = `/sys/fs/cgroup/memory/toolyard-test-${process.pid}`
    mkdirSync(cgroup)
    writeFileSync(`${cgroup}/memory.limit_in_bytes`, String(512 * 1024 * 1024))
    const script = "import { createSandboxRuntime } from './platforms/node/index.ts'\nconst runtime = createSandboxRuntime()\nconsole.log(JSON.stringify({ max: runtime.load().maxConcurrentRuns, limit: process.constrainedMemory() }))\nawait runtime.dispose()"
    const run = (inCgroup: boolean) => {
      // The shell moves itself into the group, then becomes node: the limit applies to node alone.
      const command = `${inCgroup ? `echo $$ > ${cgroup}/cgroup.procs && ` : ''}exec "${process.execPath}" --import tsx --input-type=module -e "$SCRIPT"`
      const child = spawnSync('sh', ['-c', command], { cwd: root, encoding: 'utf8', timeout: 30_000, env: { ...process.env, SCRIPT: script } })
      expect(child.status, child.stderr).toBe(0)
      return JSON.parse(child.stdout.trim()) as { max: number; limit: number }
    }
    try {
      const contained = run(true)
      const free = run(false)
      expect(contained.limit).toBe(512 * 1024 * 1024)
      // A quarter of 512 MiB over (64 MiB VM + 24 MiB thread + 32 MiB pending arguments) a run.
      expect(contained.max).toBe(1)
      expect(free.max).toBeGreaterThan(contained.max)
    } finally {
      rmdirSync(cgroup)
    }
  }, 60_000)
})
