/** test/support/child.ts: the ready wait, the bounded output, the group kill, the deadlines. */
import { afterAll, describe, expect, it } from 'vitest'
import { startChild, stopChildren } from '../../support/child.js'
import { until } from '../../support/poll.js'

const node = (code: string) => [process.execPath, ['-e', code]] as const
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

afterAll(stopChildren)

describe('startChild', () => {
  it('waitFor resolves with what the matcher finds in stdout, once it is printed', async () => {
    const child = startChild(...node("console.error('noise'); setTimeout(() => console.log('{\"url\":\"http://x\"}'), 20); setInterval(() => {}, 1000)"))
    const url = await child.waitFor((out) => /"url":"([^"]+)"/.exec(out)?.[1], 'the url')
    expect(url).toBe('http://x')
    expect(child.stderr).toContain('noise')
    expect(child.output).toContain('noise')
    await child.stop()
  })

  it('waitFor rejects when the child exits first, with the tail of its output', async () => {
    const child = startChild(...node("console.error('boom'); process.exit(3)"))
    await expect(child.waitFor(() => undefined, 'a ready line')).rejects.toThrow(/exited \(\{"code":3,"signal":null\}\) before a ready line: boom/)
  })

  it('waitFor rejects at its deadline while the child lives on', async () => {
    const child = startChild(...node('setInterval(() => {}, 1000)'))
    await expect(child.waitFor(() => undefined, 'nothing', 50)).rejects.toThrow(/timed out after 50 ms waiting for nothing/)
    expect(alive(child.process.pid!)).toBe(true)
    expect((await child.stop()).signal).toBe('SIGKILL')
  })

  it('kill reaches the whole group: a grandchild dies with its parent', async () => {
    const child = startChild('bash', ['-c', 'sleep 300 & echo "grandchild $!"; wait'])
    const grandchild = Number(await child.waitFor((out) => /grandchild (\d+)/.exec(out)?.[1], 'the grandchild'))
    expect(alive(grandchild)).toBe(true)
    await child.stop()
    await until(() => !alive(grandchild), 'the grandchild to die')
  })

  it('keeps only the latest `keep` characters of output', async () => {
    const child = startChild(...node("process.stdout.write('a'.repeat(5000) + 'END')"), { keep: 100 })
    await child.exited
    expect(child.output).toHaveLength(100)
    expect(child.stdout.endsWith('aaaEND')).toBe(true)
  })

  it('passes env (undefined removes a variable) and cwd', async () => {
    process.env.TOOLYARD_CHILD_TEST_DROP = 'x'
    const child = startChild(...node('console.log(JSON.stringify([process.env.A, process.env.TOOLYARD_CHILD_TEST_DROP ?? null, process.cwd()]))'), { env: { A: '1', TOOLYARD_CHILD_TEST_DROP: undefined }, cwd: '/' })
    delete process.env.TOOLYARD_CHILD_TEST_DROP
    await child.exited
    expect(JSON.parse(child.stdout)).toEqual(['1', null, '/'])
  })

  it('exit(ms) kills a child past its deadline and says so; a missing binary ends with an error', async () => {
    const held = await startChild(...node('setInterval(() => {}, 1000)')).exit(50)
    expect(held).toMatchObject({ timedOut: true, signal: 'SIGKILL' })
    const missing = startChild('/nonexistent/toolyard-binary', [])
    expect((await missing.exit(10_000)).error).toMatch(/ENOENT/)
    expect(missing.output).toContain('[could not start:')
  })
})
