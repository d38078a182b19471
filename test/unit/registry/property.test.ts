import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ParameterSchemaSpec, ValueSchemaSpec } from '../../../src/schema/dsl.js'
import { deepFrozen } from './helpers.js'
import type { ToolExecutionResult } from './types.js'

const leaf: fc.Arbitrary<ValueSchemaSpec> = fc.oneof(
  fc.constant({ type: 'string' } as const),
  fc.constant({ type: 'number' } as const),
  fc.constant({ type: 'integer' } as const),
  fc.constant({ type: 'boolean' } as const),
  fc.constant({ type: 'null' } as const),
  fc.constant({ type: 'json' } as const),
  fc.constantFrom('a', 'b', 'c').map((v) => ({ type: 'string', enum: [v, 'z'] }) as const),
)

const { value: valueSpec } = fc.letrec<{ value: ValueSchemaSpec }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('value').map((items) => ({ type: 'array', items }) as const),
    fc
      .tuple(fc.dictionary(fc.string({ maxLength: 4 }), fc.record({ spec: tie('value'), required: fc.boolean() }), { maxKeys: 3 }), fc.boolean())
      .map(([props, additionalProperties]) => ({
        type: 'object' as const,
        additionalProperties,
        properties: Object.fromEntries(Object.entries(props).map(([k, p]) => [k, { ...p.spec, required: p.required }])),
      })),
  ),
}))

const parameterSpec: fc.Arbitrary<ParameterSchemaSpec> = fc
  .dictionary(fc.string({ maxLength: 4 }), fc.record({ spec: valueSpec, required: fc.boolean() }), { maxKeys: 4 })
  .map((props) => Object.fromEntries(Object.entries(props).map(([k, p]) => [k, { ...p.spec, required: p.required }])))

/** Arguments of every kind, lossless or not: JSON, plus undefined, BigInt, NaN, -0, functions, dates, symbols, sparse arrays, cycles. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(undefined, 1n, Number.NaN, -0, Number.POSITIVE_INFINITY, () => 1, new Date(0), Symbol('s'), [1, , 3]),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.oneof(fc.jsonValue(), fc.constantFrom(undefined, 2n, -0))),
  fc.constant(null).map(() => {
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    return cyclic
  }),
  fc.constant(null).map(() => Object.defineProperty({}, 'x', { get: () => { throw new Error('getter') }, enumerable: true })),
)

type BodyBehaviour = 'echo' | 'throw' | 'undefined' | 'bigint' | 'defer-then-throw'

describe('property: any arguments against any DSL schema', () => {
  it('always resolves to exactly one deep-frozen result, never an exception', async () => {
    await fc.assert(
      fc.asyncProperty(
        parameterSpec,
        valueSpec,
        hostileValue,
        fc.constantFrom<BodyBehaviour>('echo', 'throw', 'undefined', 'bigint', 'defer-then-throw'),
        fc.boolean(),
        async (parameters, outputSpec, args, behaviour, preAborted) => {
          const runtime = createToolRuntime()
          const tool = defineTool({
            name: 'fuzz',
            description: 'fuzzed',
            parameters,
            output: { schema: outputSpec, render: (_a, v) => [{ type: 'text', text: JSON.stringify(v) }] },
            execute: (a, exec) => {
              if (behaviour === 'throw') throw new Error('body threw')
              if (behaviour === 'undefined') return undefined as never
              if (behaviour === 'bigint') return 1n as never
              if (behaviour === 'defer-then-throw') {
                exec.deferContext({ source: 'fuzz', content: 'ctx' })
                throw new Error('after defer')
              }
              return a as never
            },
          })
          runtime.register(tool)
          const published: ToolExecutionResult[] = []
          runtime.on('tools/result', (_e, r) => void published.push(r))
          const signal = preAborted ? AbortSignal.abort() : new AbortController().signal
          const result = await runtime.execute({ callId: 'p', name: 'fuzz', arguments: args, signal })
          expect(published).toHaveLength(1)
          expect(published[0]).toBe(result)
          expect(deepFrozen(result)).toBe(true)
          if (result.isError) {
            expect('value' in result).toBe(false)
            expect(result.content).toEqual([{ type: 'text', text: `Error: ${result.error.message}` }])
            expect(typeof result.error.info?.code).toBe('string')
          }
          if (preAborted && !result.isError) throw new Error('a pre-aborted call succeeded')
        },
      ),
      { numRuns: 300 },
    )
  })
})
