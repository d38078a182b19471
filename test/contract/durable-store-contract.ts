/**
 * The `DurableStore` contract suite: every driver runs it (the memory store in Node and in
 * workerd, the file store in Node, the Durable Object store in workerd through Miniflare).
 * It imports only vitest and `src/`, so it runs in every environment.
 *
 * @module
 */
import { describe, expect, it } from 'vitest'
import type { DurableStore } from '../../src/durable/store.js'
import { MAX_STORE_KEY_LENGTH } from '../../src/durable/store.js'

/** Builds a fresh, empty store honouring the given value cap. */
export type StoreFactory = (options: { readonly maxValueBytes?: number }) => DurableStore | Promise<DurableStore>

/** What a driver's harness changes in the suite, each with its reason (never silently). */
export interface StoreContractOptions {
  /** How many concurrent increments the concurrency case runs (default 100), and why fewer. */
  readonly concurrentIncrements?: { readonly count: number; readonly why: string }
}

/** Registers the contract suite for one driver. */
export function describeDurableStoreContract(label: string, makeStore: StoreFactory, contractOptions: StoreContractOptions = {}): void {
  const concurrent = contractOptions.concurrentIncrements?.count ?? 100
  describe(`DurableStore contract: ${label}`, () => {
    const fresh = () => Promise.resolve(makeStore({}))

    it('round-trips put, get and delete', async () => {
      const store = await fresh()
      expect(await store.get('a')).toBeUndefined()
      const put = await store.put('a', '{"n":1}')
      expect(put.ok).toBe(true)
      expect(await store.get('a')).toEqual({ value: '{"n":1}', version: put.ok ? put.version : '' })
      const text = 'multi\nline ☃ 𝄞 "quoted" \\ \u0000 end'
      await store.put('run/x/journal', text)
      expect((await store.get('run/x/journal'))?.value).toBe(text)
      expect(await store.put('empty', '')).toMatchObject({ ok: true })
      expect((await store.get('empty'))?.value).toBe('')
      expect(await store.delete('a')).toEqual({ ok: true })
      expect(await store.get('a')).toBeUndefined()
      expect(await store.delete('a')).toEqual({ ok: true })
    })

    it('changes the version on every write, and never repeats one after a delete', async () => {
      const store = await fresh()
      const seen = new Set<string>()
      for (let i = 0; i < 5; i++) {
        const result = await store.put('k', String(i))
        expect(result.ok).toBe(true)
        seen.add(result.version!)
        expect((await store.get('k'))?.version).toBe(result.version)
      }
      const last = (await store.get('k'))!.version
      await store.delete('k')
      const again = await store.put('k', 'new life', { ifVersion: null })
      expect(again.ok).toBe(true)
      seen.add(again.version!)
      expect(seen.size).toBe(6)
      expect(await store.put('k', 'stale writer', { ifVersion: last })).toEqual({ ok: false, version: again.version })
    })

    it('compare-and-set on put: success, conflict, and null meaning only if absent', async () => {
      const store = await fresh()
      const created = await store.put('k', 'v1', { ifVersion: null })
      expect(created.ok).toBe(true)
      expect(await store.put('k', 'again', { ifVersion: null })).toEqual({ ok: false, version: created.version })
      const next = await store.put('k', 'v2', { ifVersion: created.version })
      expect(next.ok).toBe(true)
      expect(next.version).not.toBe(created.version)
      expect(await store.put('k', 'lost', { ifVersion: created.version })).toEqual({ ok: false, version: next.version })
      expect(await store.put('absent', 'x', { ifVersion: next.version })).toEqual({ ok: false, version: undefined })
      expect((await store.get('k'))?.value).toBe('v2')
      expect(await store.get('absent')).toBeUndefined()
    })

    it('compare-and-set on delete: success and conflict', async () => {
      const store = await fresh()
      const first = await store.put('k', 'v1')
      const second = await store.put('k', 'v2')
      expect(await store.delete('k', { ifVersion: first.version })).toEqual({ ok: false, version: second.version })
      expect(await store.delete('k', { ifVersion: null })).toEqual({ ok: false, version: second.version })
      expect((await store.get('k'))?.value).toBe('v2')
      expect(await store.delete('k', { ifVersion: second.version })).toEqual({ ok: true })
      expect(await store.get('k')).toBeUndefined()
      expect(await store.delete('k', { ifVersion: second.version })).toEqual({ ok: false, version: undefined })
    })

    it('lists by prefix in key order, paged, without foreign keys', async () => {
      const store = await fresh()
      const keys = ['run/b', 'run/a', 'run/c/1', 'runner', 'run/c/2', 'ru', 'approval/1', 'run/', 'run/a/x']
        .filter((key) => !key.endsWith('/'))
      for (const key of keys) await store.put(key, `value of ${key}`)
      await store.put('run/gone', 'x')
      await store.delete('run/gone')
      const all = await store.list('run/')
      expect(all.entries.map((entry) => entry.key)).toEqual(['run/a', 'run/a/x', 'run/b', 'run/c/1', 'run/c/2'])
      expect(all.cursor).toBeUndefined()
      for (const entry of all.entries) expect(entry.version).toBe((await store.get(entry.key))!.version)
      expect(Object.keys(all.entries[0]!).sort()).toEqual(['key', 'version'])

      const paged: string[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const page = await store.list('run/', { limit: 2, ...(cursor === undefined ? {} : { after: cursor }) })
        expect(page.entries.length).toBeLessThanOrEqual(2)
        paged.push(...page.entries.map((entry) => entry.key))
        cursor = page.cursor
        pages++
      } while (cursor !== undefined && pages < 10)
      expect(paged).toEqual(['run/a', 'run/a/x', 'run/b', 'run/c/1', 'run/c/2'])
      expect((await store.list('')).entries.map((entry) => entry.key)).toEqual(['approval/1', 'ru', 'run/a', 'run/a/x', 'run/b', 'run/c/1', 'run/c/2', 'runner'])
      expect((await store.list('nothing/')).entries).toEqual([])
      expect((await store.list('run/', { after: 'run/c/1' })).entries.map((entry) => entry.key)).toEqual(['run/c/2'])
      // A cursor before the prefix starts at the prefix; one past it lists nothing.
      expect((await store.list('run/', { after: 'approval/1', limit: 1 })).entries.map((entry) => entry.key)).toEqual(['run/a'])
      expect((await store.list('run/', { after: 'runner' })).entries).toEqual([])
      // A cursor equal to the prefix, where that prefix is itself a key: the key is past, its children are not.
      expect((await store.list('run/a', { after: 'run/a' })).entries.map((entry) => entry.key)).toEqual(['run/a/x'])
      expect((await store.list('ru', { after: 'ru' })).entries.map((entry) => entry.key)).toEqual(['run/a', 'run/a/x', 'run/b', 'run/c/1', 'run/c/2', 'runner'])
    })

    it('pages on after a cursor whose key was deleted meanwhile; a key deleted and written again is listed once', async () => {
      const store = await fresh()
      for (const key of ['run/a', 'run/b', 'run/c', 'run/d']) await store.put(key, key)
      const first = await store.list('run/', { limit: 2 })
      expect(first).toMatchObject({ cursor: 'run/b' })
      await store.delete('run/b')
      await store.delete('run/c')
      await store.put('run/c', 'again')
      await store.put('run/a', 'rewritten')
      const second = await store.list('run/', { limit: 2, after: first.cursor! })
      expect(second.entries.map((entry) => entry.key)).toEqual(['run/c', 'run/d'])
      expect(second.cursor).toBeUndefined()
      expect((await store.list('run/')).entries.map((entry) => entry.key)).toEqual(['run/a', 'run/c', 'run/d'])
    })

    it('refuses malformed keys with INVALID_STORE_KEY, before touching anything', async () => {
      const store = await fresh()
      const bad: unknown[] = [
        '', '../x', 'a/../../x', '..', '.', '/abs', '/etc/passwd', 'a//b', 'a/', 'a\u0000b', 'a\\b', 'C:\\x', 'sp ace', '%2e%2e',
        'x'.repeat(MAX_STORE_KEY_LENGTH + 1), 'é', 42, null, undefined,
      ]
      for (const key of bad) {
        await expect(store.get(key as string), String(key)).rejects.toMatchObject({ code: 'INVALID_STORE_KEY' })
        await expect(store.put(key as string, 'v'), String(key)).rejects.toMatchObject({ code: 'INVALID_STORE_KEY' })
        await expect(store.delete(key as string), String(key)).rejects.toMatchObject({ code: 'INVALID_STORE_KEY' })
      }
      await expect(store.list('../')).rejects.toMatchObject({ code: 'INVALID_STORE_KEY' })
      await expect(store.list('a\u0000')).rejects.toMatchObject({ code: 'INVALID_STORE_KEY' })
      await expect(store.list('', { after: 'a\\b' })).rejects.toMatchObject({ code: 'INVALID_STORE_KEY' })
      await expect(store.list('', { limit: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
      await expect(store.put('k', 'v', { ifVersion: 3 as unknown as string })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
      expect((await store.list('')).entries).toEqual([])
      const longest = 'x'.repeat(MAX_STORE_KEY_LENGTH)
      expect(await store.put(longest, 'v')).toMatchObject({ ok: true })
      expect((await store.get(longest))?.value).toBe('v')
      expect(await store.put('a.b/c-d_e~f:g@h=i+j/..x', 'v')).toMatchObject({ ok: true })
    })

    it('refuses values past the cap, non-strings and lone surrogates', async () => {
      const store = await makeStore({ maxValueBytes: 16 })
      expect(await store.put('k', 'x'.repeat(16))).toMatchObject({ ok: true })
      await expect(store.put('k', 'x'.repeat(17))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
      // 6 snowmen are 18 UTF-8 bytes in 6 UTF-16 units: the cap counts bytes.
      await expect(store.put('k', '☃'.repeat(6))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
      await expect(store.put('k', 'x'.repeat(10_000_000))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
      await expect(store.put('k', { a: 1 } as unknown as string)).rejects.toMatchObject({ code: 'INVALID_STORE_VALUE' })
      await expect(store.put('k', 'a\ud800b')).rejects.toMatchObject({ code: 'INVALID_STORE_VALUE' })
      await expect(store.put('k', 'x\udd1e')).rejects.toMatchObject({ code: 'INVALID_STORE_VALUE' })
      // A surrogate pair is 4 UTF-8 bytes: four clefs fit 16 bytes, five do not.
      expect(await store.put('clef', '\u{1d11e}'.repeat(4))).toMatchObject({ ok: true })
      expect((await store.get('clef'))?.value).toBe('\u{1d11e}'.repeat(4))
      await expect(store.put('k', '\u{1d11e}'.repeat(5))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
      expect((await store.get('k'))?.value).toBe('x'.repeat(16))
    })

    it(`${concurrent} concurrent compare-and-set increments of one key: exactly ${concurrent} land`, async () => {
      const store = await fresh()
      await store.put('counter', '0')
      let conflicts = 0
      const increment = async () => {
        for (;;) {
          const current = (await store.get('counter'))!
          const result = await store.put('counter', String(Number(current.value) + 1), { ifVersion: current.version })
          if (result.ok) return
          conflicts++
        }
      }
      await Promise.all(Array.from({ length: concurrent }, increment))
      expect((await store.get('counter'))?.value).toBe(String(concurrent))
      expect(conflicts).toBeGreaterThanOrEqual(0)
    })
  })
}
