import { describe, expectTypeOf, it } from 'vitest'
import type { JsonValue } from '../../src/json/json-value.js'
import { defineTool, validateArgs } from '../../src/schema/define-tool.js'
import type { InferArgs, InferValue } from '../../src/schema/infer.js'
import type { ToolCaller, ToolDefinition, ToolPreviewContext } from '../../src/types.js'

describe('InferArgs / InferValue', () => {
  it('infers the seed read_file example', () => {
    const tool = defineTool({
      name: 'read_file',
      description: 'Read a file from disk.',
      parameters: {
        path: { type: 'string', required: true, description: 'Absolute file path' },
        offset: { type: 'number' },
        limit: { type: 'number' },
      },
      output: {
        schema: { type: 'string' },
        render: (_args, value) => {
          expectTypeOf(value).toEqualTypeOf<string>()
          return [{ type: 'text', text: value }]
        },
      },
      async execute(args, exec) {
        expectTypeOf(args).toEqualTypeOf<{ path: string; offset?: number; limit?: number }>()
        expectTypeOf(exec.signal).toEqualTypeOf<AbortSignal>()
        return `read ${args.path}`
      },
    })
    expectTypeOf(tool).toExtend<ToolDefinition<{ path: string; offset?: number; limit?: number }, string>>()
    expectTypeOf(tool.validateArgs).toEqualTypeOf<
      ((args: JsonValue) => { path: string; offset?: number; limit?: number }) | undefined
    >()
  })

  it('narrows enums and consts to literal unions', () => {
    type A = InferArgs<{
      mode: { type: 'string'; enum: readonly ['read', 'write']; required: true }
      level: { type: 'integer'; enum: readonly [1, 2, 3] }
      flag: { type: 'boolean'; const: true }
      kind: { type: 'string'; const: 'fixed'; required: true }
    }>
    expectTypeOf<A>().toEqualTypeOf<{ mode: 'read' | 'write'; kind: 'fixed'; level?: 1 | 2 | 3; flag?: true }>()
  })

  it('turns oneOf into a union and json into JsonValue', () => {
    type V = InferValue<{ oneOf: readonly [{ type: 'string' }, { type: 'null' }, { type: 'array'; items: { type: 'integer' } }] }>
    expectTypeOf<V>().toEqualTypeOf<string | null | number[]>()
    expectTypeOf<InferValue<{ type: 'json' }>>().toEqualTypeOf<JsonValue>()
  })

  it('types objects by additionalProperties and properties', () => {
    expectTypeOf<InferValue<{ type: 'object'; additionalProperties: true }>>().toEqualTypeOf<{ [key: string]: JsonValue }>()
    expectTypeOf<InferValue<{ type: 'object'; additionalProperties: false }>>().toEqualTypeOf<Record<string, never>>()
    expectTypeOf<
      InferValue<{
        type: 'object'
        additionalProperties: false
        properties: { a: { type: 'string'; required: true }; b: { type: 'array' } }
      }>
    >().toEqualTypeOf<{ a: string; b?: JsonValue[] }>()
  })

  it('is exact through 16 container levels, then falls back to JsonValue', () => {
    type Wrap<T> = { type: 'array'; items: T }
    type L16 = Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<Wrap<{ type: 'string' }>>>>>>>>>>>>>>>>
    type L17 = Wrap<L16>
    expectTypeOf<InferValue<L16>>().toEqualTypeOf<string[][][][][][][][][][][][][][][][]>()
    expectTypeOf<InferValue<L17>>().toEqualTypeOf<JsonValue[][][][][][][][][][][][][][][][][]>()
  })

  it('types the standalone validateArgs and the output projections', () => {
    const args = validateArgs({ n: { type: 'integer', required: true } }, { n: 1 })
    expectTypeOf(args).toEqualTypeOf<{ n: number }>()
    defineTool({
      name: 'stat',
      description: 'x',
      parameters: { path: { type: 'string', required: true } },
      output: {
        schema: {
          type: 'object',
          additionalProperties: false,
          properties: { size: { type: 'integer', required: true }, kind: { type: 'string', enum: ['file', 'dir'], required: true } },
        },
        render: (args, value) => {
          expectTypeOf(args).toEqualTypeOf<{ path: string }>()
          expectTypeOf(value).toEqualTypeOf<{ size: number; kind: 'file' | 'dir' }>()
          return []
        },
        presentationMeta: (_args, value) => value.size,
      },
      execute: () => ({ size: 1, kind: 'file' as const }),
      presentCall: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ path: string } | undefined>()
        return undefined
      },
    })
  })

  it('rejects a body returning the wrong type', () => {
    defineTool({
      name: 'bad',
      description: 'x',
      parameters: {},
      output: { schema: { type: 'string' }, render: () => [] },
      // @ts-expect-error a number is not the declared string output
      execute: () => 1,
    })
  })

  it('types callers: native, code or both; nothing else', () => {
    const spec = { name: 'c', description: 'x', parameters: {}, output: { schema: { type: 'string' }, render: () => [] }, execute: () => 'x' } as const
    expectTypeOf(defineTool({ ...spec, callers: ['code'] }).callers).toEqualTypeOf<readonly ToolCaller[] | undefined>()
    defineTool({ ...spec, callers: ['native', 'code'] })
    // @ts-expect-error 'model' is not a caller
    defineTool({ ...spec, callers: ['model'] })
  })
})

describe('defineTool({ preview })', () => {
  it('receives the inferred arguments and a preview context; answers text or a promise of it', () => {
    const tool = defineTool({
      name: 'write_file',
      description: 'Write a file.',
      parameters: { path: { type: 'string', required: true }, content: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
      execute: (args) => args.path,
      preview(args, ctx) {
        expectTypeOf(args).toEqualTypeOf<{ path: string; content: string }>()
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>()
        expectTypeOf(ctx.callId).toEqualTypeOf<string>()
        return Promise.resolve(`writes ${args.path}`)
      },
    })
    expectTypeOf(tool.preview).toEqualTypeOf<((args: { path: string; content: string }, ctx: ToolPreviewContext) => string | Promise<string>) | undefined>()
    defineTool({
      name: 'bad',
      description: 'A preview must answer text.',
      parameters: {},
      output: { schema: { type: 'string' }, render: () => [] },
      execute: () => 'x',
      // @ts-expect-error a preview answers text, not a number
      preview: () => 42,
    })
  })
})
