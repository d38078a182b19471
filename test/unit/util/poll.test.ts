import { describe, expect, it } from 'vitest'
import { until } from '../../support/poll.js'

describe('until (test/support/poll.ts)', () => {
  it('resolves with the first value that is neither undefined nor false, async probes included', async () => {
    let calls = 0
    await expect(until(() => (++calls < 3 ? undefined : calls))).resolves.toBe(3)
    await expect(until(async () => true)).resolves.toBe(true)
    expect(await until(() => 0)).toBe(0)
  })

  it('rejects naming what it waited for once the deadline passed, and at once when the probe throws', async () => {
    await expect(until(() => false, 'the moon', 0, 1)).rejects.toThrow('timed out waiting for the moon')
    let seen = 0
    // The message is read when the deadline passes: it names the looks taken by then (1 ms sleeps
    // against Date.now()'s whole milliseconds: one to a few, never the 1,001 that would end the wait).
    await expect(until(() => ++seen > 1_000, () => `the sun (${seen} looks)`, 0, 1)).rejects.toThrow(/^timed out waiting for the sun \(\d+ looks\)$/)
    await expect(
      until(() => {
        throw new Error('probe broke')
      }),
    ).rejects.toThrow('probe broke')
  })
})
