/**
 * The batches between the page and a sandbox Web Worker (platforms/browser/message-batch.ts)
 * as a unit: how many `postMessage`s a burst costs (each is one task of the receiver's event
 * loop, and the page's timers, input and frames waited behind 10,000 of them), that a lone
 * message and the first of a turn still go at once, that order is kept, and that a message
 * that is not text is never batched. test/browser/sandbox-call-flood.test.ts counts the
 * same on a real worker: the message events a 10,000-call flood puts on the page.
 */
import { describe, expect, it } from 'vitest'
import { AT_ONCE_MESSAGES, BATCH_MESSAGES, batchedSender, eachMessage } from '../../../platforms/browser/message-batch.js'

/** A sender over a recorded `postMessage`, whose turns end when the test says. */
function recorded() {
  const posts: unknown[] = []
  const ends: Array<() => void> = []
  const send = batchedSender(
    (message) => posts.push(message),
    (then) => ends.push(then),
  )
  /** Ends the open turn (the microtask or macrotask that `later` stands for). */
  const endTurn = (): void => {
    for (const then of ends.splice(0)) then()
  }
  /** What the receiver handles, in order, batches opened. */
  const received = (): unknown[] => {
    const out: unknown[] = []
    for (const post of posts) eachMessage(post, (message) => out.push(message))
    return out
  }
  return { posts, send, endTurn, received }
}

describe('batchedSender', () => {
  it('sends a lone message at once, as itself', () => {
    const { posts, send } = recorded()
    send('{"type":"call","id":1}')
    expect(posts).toEqual(['{"type":"call","id":1}'])
  })

  it('sends a burst of 10,000 in one turn as AT_ONCE_MESSAGES posts and then batches of BATCH_MESSAGES, in order', () => {
    expect(AT_ONCE_MESSAGES).toBe(16)
    expect(BATCH_MESSAGES).toBe(64)
    const { posts, send, endTurn, received } = recorded()
    const burst = Array.from({ length: 10_000 }, (_, i) => String(i))
    for (const message of burst) send(message)
    // Unbatched, 10,000 posts: 10,000 tasks queued on the page ahead of its timers.
    expect(posts.length).toBe(16 + Math.floor((10_000 - 16) / 64))
    endTurn()
    expect(posts.length).toBe(16 + Math.ceil((10_000 - 16) / 64))
    for (const post of posts.slice(16)) expect((post as unknown[]).length).toBeLessThanOrEqual(BATCH_MESSAGES)
    expect(received()).toEqual(burst)
  })

  it('sends the tail of a burst when the turn ends, and the next turn starts one by one again', () => {
    const { posts, send, endTurn, received } = recorded()
    for (let i = 0; i < 20; i++) send(String(i))
    expect(posts).toHaveLength(16)
    endTurn()
    expect(posts).toHaveLength(17)
    expect(posts[16]).toEqual(['16', '17', '18', '19'])
    send('20')
    expect(posts[17]).toBe('20')
    expect(received()).toEqual(Array.from({ length: 21 }, (_, i) => String(i)))
  })

  it('never batches a message that is not text: it flushes the batch before it and goes alone', () => {
    const { posts, send, endTurn, received } = recorded()
    for (let i = 0; i < 18; i++) send(String(i))
    const control = { type: 'end', run: 1 }
    send(control)
    expect(posts.slice(16)).toEqual([['16', '17'], control])
    send('18')
    endTurn()
    expect(received()).toEqual([...Array.from({ length: 18 }, (_, i) => String(i)), control, '18'])
  })

  it('a post that throws on a message that is not text throws to its sender', () => {
    const send = batchedSender(
      (message) => {
        if (typeof message !== 'string') throw new Error('DataCloneError')
      },
      () => {},
    )
    expect(() => send({ type: 'boot', fn: () => 1 })).toThrow('DataCloneError')
  })
})

describe('eachMessage', () => {
  it('hands over a message that is not a batch as it is', () => {
    const seen: unknown[] = []
    eachMessage({ type: 'ready' }, (message) => seen.push(message))
    eachMessage('text', (message) => seen.push(message))
    expect(seen).toEqual([{ type: 'ready' }, 'text'])
  })
})
