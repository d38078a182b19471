/**
 * A definition whose members cannot be listed (a Proxy whose `ownKeys` throws) is refused with
 * the reason, not registered with its misspellings unchecked (mutation testing, stop 55).
 */
import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { thrownToolError as refusal } from '../../support/refusal.js'

const output = { schema: { type: 'number' }, render: (_a: unknown, v: number) => [{ type: 'text' as const, text: String(v) }] } as const
const raw = { name: 'listed', description: 'd', parameters: { type: 'object', properties: {} }, output, execute: () => 1 }

describe('a definition whose members cannot be listed', () => {
  it('register refuses it: INVALID_DEFINITION, naming why, and nothing is registered', async () => {
    const runtime = createToolRuntime({})
    const hostile = new Proxy(raw, {
      ownKeys() {
        throw new Error('no keys here')
      },
    })
    const refused = refusal(() => runtime.register(hostile as never))
    expect(refused).toEqual({ code: 'INVALID_DEFINITION', message: 'tool "listed": the members could not be listed (no keys here)' })
    expect(runtime.view().schemas.map((s) => s.name)).toEqual([])
    await runtime.dispose()
  })
})
