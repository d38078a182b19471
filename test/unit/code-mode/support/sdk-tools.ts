import type { SdkToolInput } from '../../../../src/code-mode/sdk-common.js'

/** A tool set that reaches every rendering rule of both SDK renderers. */
export const SDK_TOOLS: SdkToolInput[] = [
  {
    name: 'search',
    description: 'Search the index.\n\nReturns hits; never */ ends a comment.  ',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for.' },
        limit: { type: 'integer', description: 'At most this many.\nDefault 10.', deprecated: true },
        mode: { enum: ['fast', 'exact'] },
        'dash-key': { type: 'boolean' },
        filters: { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'null' }] } },
        exact: { const: 3 },
        raw: {},
        anything: { $ref: '#/x' } as never,
      },
      required: ['query', 'dash-key'],
      additionalProperties: false,
    },
    output: {
      type: 'object',
      properties: {
        hits: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, score: { type: 'number' } }, required: ['id'] } },
        total: { type: 'integer' },
        tags: { type: 'array', items: { enum: ['a', 'b'] } },
        list: { type: 'array' },
        none: { type: 'object', properties: {}, additionalProperties: false },
        open: { type: 'object' },
      },
      required: ['hits'],
      additionalProperties: false,
    },
  },
  {
    name: 'ping',
    description: '',
    parameters: { type: 'object', properties: { verbose: { type: 'boolean' } } },
    output: { oneOf: [{ type: 'string' }, { type: 'null' }] },
  },
  {
    name: 'fetch-url',
    description: 'Fetch a URL.\n"""quoted"""',
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', description: 'Absolute URL.' },
        headers: { type: 'object', properties: { accept: { type: 'string' } }, additionalProperties: false },
        retries: { enum: [1, 2] },
        flag: { const: true },
        maybe: { oneOf: [{ type: 'integer' }, { type: 'object', properties: { deep: { type: 'number' } }, required: ['deep'], additionalProperties: true }] },
      },
      required: ['url'],
      additionalProperties: false,
    },
    output: { type: 'array', items: { type: 'object', properties: { status: { type: 'integer' } }, required: ['status'], additionalProperties: false } },
  },
  {
    name: 'kw',
    description: 'A field named like a keyword.',
    parameters: { type: 'object', properties: { class: { type: 'string' } }, required: ['class'], additionalProperties: false },
    output: { enum: [null, false, 1.5, 'x'] },
  },
  {
    name: 'no_args',
    description: 'Takes nothing.',
    parameters: { type: 'object' },
    output: { type: 'null' },
  },
]
