/**
 * The memory image a Node sandbox thread took is handed to later threads as a copy of its own:
 * no two threads share its bytes (a thread a program escaped into could otherwise rewrite the
 * VMs every other thread restores).
 */
import { describe, expect, it } from 'vitest'
import { ownBytes } from '../../../platforms/node/sandbox-runtime.js'

describe('ownBytes (the sandbox memory image handed to a thread)', () => {
  it('copies the bytes into a shared buffer of their own; the rest of the image is kept', () => {
    const bytes = new Uint8Array(new SharedArrayBuffer(8))
    bytes.set([1, 2, 3, 4, 5, 6, 7, 8])
    const runs = new Int32Array([0, 8])
    const image = { memory: { pages: 1, runs, bytes }, rt: 16, early: ['ready'] }
    const first = ownBytes(image) as typeof image
    const second = ownBytes(image) as typeof image
    expect(first.memory.bytes.buffer).not.toBe(bytes.buffer)
    expect(second.memory.bytes.buffer).not.toBe(first.memory.bytes.buffer)
    expect(first.memory.bytes.buffer).toBeInstanceOf(SharedArrayBuffer)
    expect([...first.memory.bytes]).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(first).toMatchObject({ memory: { pages: 1, runs }, rt: 16, early: ['ready'] })
    // A write through one thread's copy reaches neither the kept image nor another thread's.
    first.memory.bytes[0] = 99
    expect(bytes[0]).toBe(1)
    expect(second.memory.bytes[0]).toBe(1)
  })

  it('refuses what is not shaped like an image', () => {
    for (const junk of [undefined, null, 1, 'image', {}, { memory: {} }, { memory: { bytes: [1, 2] } }]) expect(ownBytes(junk)).toBeUndefined()
  })
})
