/**
 * The file store's listing reads its directory's names again only when the directory's
 * modification time moved (platforms/node/file-store.ts `directoryKeys`): an idle store's
 * listing costs a `stat`. Writes by another store on the same directory (another process)
 * are listed; a reading of a directory changed less than 3 s before is never kept.
 */
import { mkdtempSync, rmSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createFileStore } from '../../../platforms/node/file-store.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A store directory with `keys` written, and two stores on it (two processes' views). */
async function setUp(keys: readonly string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-listing-'))
  dirs.push(dir)
  const a = createFileStore(dir)
  const b = createFileStore(dir)
  for (const key of keys) await a.put(key, 'v')
  return { dir, a, b }
}

const keysOf = async (store: ReturnType<typeof createFileStore>, prefix: string, options: { limit?: number; after?: string } = {}) =>
  (await store.list(prefix, options)).entries.map((entry) => entry.key)

/** Sets the directory's times to `seconds` (whole seconds: the same value twice gives the same nanoseconds). */
const touch = (dir: string, seconds: number) => utimesSync(dir, seconds, seconds)

describe('file store: a listing of an unchanged directory reads no names', () => {
  it('lists the same keys, pages and cursors with a kept reading as with a fresh one', async () => {
    const { dir, a } = await setUp(['a/1', 'a/2', 'a/3', 'b/1', 'ab/1'])
    touch(dir, Math.floor(Date.now() / 1000) - 10)
    const fresh = async () => [await keysOf(createFileStore(dir), 'a/'), await createFileStore(dir).list('a', { limit: 2, after: 'a/1' })]
    const expected = await fresh()
    await keysOf(a, '')
    expect([await keysOf(a, 'a/'), await a.list('a', { limit: 2, after: 'a/1' })]).toEqual(expected)
    expect(expected[0]).toEqual(['a/1', 'a/2', 'a/3'])
    expect(await keysOf(a, 'a/', { after: 'a/3' })).toEqual([])
    expect(await keysOf(a, 'a/', { after: 'a' })).toEqual(['a/1', 'a/2', 'a/3'])
    expect(await keysOf(a, 'a/', { after: 'b' })).toEqual([])
  })

  // A name added by another store, then the directory's time set back to what it was: listed only when the first reading was not kept.
  it.each([
    ['kept while the directory stays as it was: the added name is not listed (the proof that no name was read)', 10, ['k/1']],
    ['not kept when the directory changed less than 3 s before it (a change in the same clock tick would not move its time)', 1, ['k/1', 'k/2']],
  ])('a reading is %s', async (_what, ageSeconds, listed) => {
    const { dir, a, b } = await setUp(['k/1'])
    const time = Math.floor(Date.now() / 1000) - (ageSeconds as number)
    touch(dir, time)
    expect(await keysOf(a, 'k/')).toEqual(['k/1'])
    await b.put('k/2', 'v')
    touch(dir, time)
    expect(await keysOf(a, 'k/')).toEqual(listed)
    expect(await keysOf(b, 'k/')).toEqual(['k/1', 'k/2'])
  })

  it("another store's write and delete on the directory are listed at once", async () => {
    const { dir, a, b } = await setUp(['k/1'])
    touch(dir, Math.floor(Date.now() / 1000) - 10)
    expect(await keysOf(a, 'k/')).toEqual(['k/1'])
    await b.put('k/2', 'v')
    expect(await keysOf(a, 'k/')).toEqual(['k/1', 'k/2'])
    touch(dir, Math.floor(Date.now() / 1000) - 10)
    expect(await keysOf(a, 'k/')).toEqual(['k/1', 'k/2'])
    await b.delete('k/1')
    expect(await keysOf(a, 'k/')).toEqual(['k/2'])
  })
})
