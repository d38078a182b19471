/**
 * Schema layer benchmark (`npx tsx bench/schema.bench.ts`, or `npm run bench:schema`).
 *
 * 1. Median time to validate a representative set of tool arguments with our compiled
 *    validator and with an ajv-compiled validator, and their ratio (target: ≤ 3×).
 * 2. Time for a schema and value 10,000 vs 100,000 levels deep (ratio ≈ 10 = linear).
 */
import { Ajv } from 'ajv'
import { snapshotLosslessJson } from '../src/json/lossless.js'
import { parameterSchemaSpecToJsonSchema, type ParameterSchemaSpec } from '../src/schema/dsl.js'
import { compileJsonSchema } from '../src/schema/json-schema.js'
import type { JsonSchemaNode } from '../src/schema/json-schema-node.js'
import { printTable, summarize, timePerCallInterleaved } from './_stats.js'

interface Case {
  readonly name: string
  readonly parameters: ParameterSchemaSpec
  readonly args: unknown
}

const cases: readonly Case[] = [
  {
    name: 'read_file',
    parameters: {
      path: { type: 'string', required: true, description: 'Absolute file path' },
      offset: { type: 'number' },
      limit: { type: 'number' },
    },
    args: { path: '/home/user/project/src/index.ts', offset: 120, limit: 200 },
  },
  {
    name: 'write_file',
    parameters: { path: { type: 'string', required: true }, content: { type: 'string', required: true } },
    args: { path: '/tmp/out.txt', content: 'hello world\n'.repeat(20) },
  },
  {
    name: 'bash',
    parameters: {
      command: { type: 'string', required: true },
      timeout: { type: 'integer' },
      cwd: { type: 'string' },
      run_in_background: { type: 'boolean' },
    },
    args: { command: 'npm test -- --run', timeout: 120000, cwd: '/work', run_in_background: false },
  },
  {
    name: 'grep',
    parameters: {
      pattern: { type: 'string', required: true },
      path: { type: 'string' },
      glob: { type: 'string' },
      output_mode: { type: 'string', enum: ['content', 'files_with_matches', 'count'] },
      case_insensitive: { type: 'boolean' },
      context: { type: 'integer' },
      head_limit: { type: 'integer' },
    },
    args: { pattern: 'export function \\w+', path: 'src', glob: '*.ts', output_mode: 'content', case_insensitive: true, context: 2 },
  },
  {
    name: 'edit_file',
    parameters: {
      path: { type: 'string', required: true },
      edits: {
        type: 'array',
        required: true,
        items: {
          type: 'object',
          additionalProperties: false,
          properties: {
            old_text: { type: 'string', required: true },
            new_text: { type: 'string', required: true },
            replace_all: { type: 'boolean' },
          },
        },
      },
    },
    args: {
      path: '/work/src/a.ts',
      edits: [
        { old_text: 'const a = 1', new_text: 'const a = 2' },
        { old_text: 'foo()', new_text: 'bar()', replace_all: true },
        { old_text: 'x', new_text: 'y' },
      ],
    },
  },
  {
    name: 'todo_write',
    parameters: {
      todos: {
        type: 'array',
        required: true,
        items: {
          type: 'object',
          additionalProperties: false,
          properties: {
            id: { type: 'string', required: true },
            content: { type: 'string', required: true },
            status: { type: 'string', enum: ['pending', 'in_progress', 'completed'], required: true },
            priority: { type: 'string', enum: ['high', 'medium', 'low'] },
          },
        },
      },
    },
    args: {
      todos: [
        { id: '1', content: 'Write the validator', status: 'completed', priority: 'high' },
        { id: '2', content: 'Write the tests', status: 'in_progress', priority: 'high' },
        { id: '3', content: 'Write the docs', status: 'pending', priority: 'medium' },
        { id: '4', content: 'Run the bench', status: 'pending' },
      ],
    },
  },
  {
    name: 'web_fetch',
    parameters: {
      url: { type: 'string', required: true },
      prompt: { type: 'string', required: true },
      headers: { type: 'object', additionalProperties: true },
    },
    args: { url: 'https://example.com/docs', prompt: 'Summarize the page', headers: { accept: 'text/html' } },
  },
  {
    name: 'open_target (oneOf)',
    parameters: {
      target: {
        required: true,
        oneOf: [
          { type: 'object', additionalProperties: false, properties: { kind: { type: 'string', const: 'file', required: true }, path: { type: 'string', required: true } } },
          { type: 'object', additionalProperties: false, properties: { kind: { type: 'string', const: 'url', required: true }, url: { type: 'string', required: true } } },
        ],
      },
      line: { type: 'integer' },
    },
    args: { target: { kind: 'url', url: 'https://example.com' }, line: 3 },
  },
  {
    name: 'run_code',
    parameters: { code: { type: 'string', required: true, description: 'TypeScript program' } },
    args: { code: 'const r = await tools.read_file({ path: "/x" })\nreturn r.length' },
  },
]

const ajv = new Ajv({ strict: false })
const prepared = cases.map((c) => {
  const schema = parameterSchemaSpecToJsonSchema(c.parameters)
  const args = snapshotLosslessJson(c.args)
  const ours = compileJsonSchema(schema)
  const theirs = ajv.compile(JSON.parse(JSON.stringify(schema)) as object)
  if (!ours.isValid(args) || theirs(args) !== true) throw new Error(`bench case ${c.name} is not valid`)
  return { name: c.name, args, ours, theirs }
})

const ITER = 20_000
const SAMPLES = 31
const rows = []
let oursTotal = 0
let ajvTotal = 0
for (const p of prepared) {
  const [oursSamples, fastSamples, ajvSamples] = timePerCallInterleaved(
    [() => void p.ours.validate(p.args), () => void p.ours.isValid(p.args), () => void p.theirs(p.args)],
    ITER,
    SAMPLES,
  )
  const ours = summarize(oursSamples!)
  const fast = summarize(fastSamples!)
  const theirs = summarize(ajvSamples!)
  oursTotal += ours.median
  ajvTotal += theirs.median
  rows.push({
    tool: p.name,
    'ours validate ns': ours.median,
    'ours isValid ns': fast.median,
    'ajv ns': theirs.median,
    'ratio (validate/ajv)': ours.median / theirs.median,
  })
}
// The whole set, as a registry would see a stream of calls to different tools.
const [allSamples, allAjvSamples] = timePerCallInterleaved(
  [
    () => {
      for (const p of prepared) p.ours.validate(p.args)
    },
    () => {
      for (const p of prepared) p.theirs(p.args)
    },
  ],
  ITER / 10,
  SAMPLES,
)
const all = summarize(allSamples!)
const allAjv = summarize(allAjvSamples!)
rows.push({
  tool: `whole set (${prepared.length} calls)`,
  'ours validate ns': all.median,
  'ours isValid ns': Number.NaN,
  'ajv ns': allAjv.median,
  'ratio (validate/ajv)': all.median / allAjv.median,
})
printTable(rows, `Representative tool arguments: median per validation (${SAMPLES} samples × ${ITER} calls)`)
console.log(`sum of per-tool medians: ours ${oursTotal.toFixed(0)} ns, ajv ${ajvTotal.toFixed(0)} ns, ratio ${(oursTotal / ajvTotal).toFixed(2)}×`)

// ───────────────────────── depth / linearity ─────────────────────────

function deep(levels: number): { schema: JsonSchemaNode; value: unknown } {
  let schema: JsonSchemaNode = { type: 'integer' }
  let value: unknown = 1
  for (let i = 0; i < levels; i++) {
    if (i % 3 === 2) schema = { oneOf: [schema, { type: 'string' }] }
    else if (i % 2 === 0) {
      schema = { type: 'array', items: schema }
      value = [value]
    } else {
      schema = { type: 'object', properties: { a: schema }, required: ['a'] }
      value = { a: value }
    }
  }
  return { schema, value }
}

function timeOnce(fn: () => void, repeats: number): number {
  const samples: number[] = []
  for (let i = 0; i < repeats; i++) {
    const start = performance.now()
    fn()
    samples.push(performance.now() - start)
  }
  return summarize(samples).median
}

// Warm the JIT on a mid-sized chain first, so the 10k row is not a cold start.
{
  const { schema, value } = deep(20_000)
  const compiled = compileJsonSchema(schema)
  for (let i = 0; i < 3; i++) {
    compiled.isValid(snapshotLosslessJson(value))
    compiled.validate(value)
  }
}
const depthRows = []
const measured: Record<number, { snapshot: number; compile: number; isValid: number; validate: number }> = {}
for (const levels of [10_000, 100_000]) {
  const { schema, value } = deep(levels)
  const snapshot = timeOnce(() => void snapshotLosslessJson(value), 5)
  const compile = timeOnce(() => void compileJsonSchema(schema), 3)
  const compiled = compileJsonSchema(schema)
  const frozen = snapshotLosslessJson(value)
  const isValid = timeOnce(() => {
    if (!compiled.isValid(frozen)) throw new Error('deep value should be valid')
  }, 5)
  const validate = timeOnce(() => void compiled.validate(frozen), 5)
  measured[levels] = { snapshot, compile, isValid, validate }
  depthRows.push({ levels, 'snapshot ms': snapshot, 'compile ms': compile, 'isValid ms': isValid, 'validate ms': validate })
}
const a = measured[10_000]!
const b = measured[100_000]!
depthRows.push({
  levels: 'ratio 100k/10k',
  'snapshot ms': b.snapshot / a.snapshot,
  'compile ms': b.compile / a.compile,
  'isValid ms': b.isValid / a.isValid,
  'validate ms': b.validate / a.validate,
})
printTable(depthRows, 'Depth (array/object/oneOf chain; median ms; ratio ≈ 10 means linear)')
