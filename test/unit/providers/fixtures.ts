/**
 * A real runtime with a typed tool, a raw tool, an image tool and a failing tool, shared
 * by the provider round-trip tests.
 */
import { createToolRuntime, defineTool } from '../../../src/index.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'

export const PNG = 'iVBORw0KGgo='

export function createProviderRuntime(): ToolRuntime {
  const runtime = createToolRuntime()
  runtime.register(
    defineTool({
      name: 'add',
      description: 'Adds two numbers.',
      parameters: { a: { type: 'number', required: true }, b: { type: 'number', required: true } },
      output: { schema: { type: 'number' }, render: (_args, value) => [{ type: 'text', text: String(value) }] },
      execute: (args) => args.a + args.b,
    }),
  )
  // A raw tool (no validateArgs), like an MCP import: anything lossless reaches the body.
  runtime.register({
    name: 'raw',
    description: 'Echoes its arguments.',
    parameters: { type: 'object' },
    output: { schema: {}, render: (_args: unknown, value: unknown) => [{ type: 'text', text: JSON.stringify(value) }] },
    execute: (args: unknown) => args as never,
  })
  runtime.register(
    defineTool({
      name: 'picture',
      description: 'Returns a picture.',
      parameters: { mime: { type: 'string' } },
      output: {
        schema: { type: 'string' },
        render: (args, value) => [
          { type: 'text', text: 'here:' },
          { type: 'image', data: value, mimeType: args.mime ?? 'image/png' },
        ],
      },
      execute: () => PNG,
    }),
  )
  runtime.register(
    defineTool({
      name: 'fail',
      description: 'Always fails.',
      parameters: {},
      output: { schema: { type: 'null' }, render: () => [] },
      execute: () => {
        throw new Error('kaput')
      },
    }),
  )
  return runtime
}

export const signal = new AbortController().signal
