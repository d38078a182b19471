import { Ajv, type ValidateFunction } from 'ajv'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { JsonPrimitive, JsonValue } from '../../../src/json/json-value.js'
import { compileJsonSchema } from '../../../src/schema/json-schema.js'
import type { JsonSchemaNode, JsonSchemaTypeName } from '../../../src/schema/json-schema-node.js'

/**
 * Differential property test: ajv 8 is the oracle for the supported subset. Each run
 * draws schemas inside the subset and, per schema, several values biased towards
 * "almost valid" (so accept and reject are both common), then requires our compiled
 * validator (both `isValid` and `validate`) to agree with ajv on every pair.
 *
 * Property names come from a small pool that avoids `Object.prototype` names: ajv's
 * `required` treats inherited properties (`toString`…) as present, a deliberate
 * difference covered by a unit test in json-schema.test.ts.
 */
const ajv = new Ajv({ strict: false })
const ajvCache = new Map<string, ValidateFunction>()
function oracle(schema: JsonSchemaNode): ValidateFunction {
  const key = JSON.stringify(schema)
  let fn = ajvCache.get(key)
  if (fn === undefined) {
    fn = ajv.compile(schema)
    ajvCache.set(key, fn)
  }
  return fn
}

const names = ['a', 'b', 'c', 'd', 'e'] as const
const scalarPool: readonly JsonPrimitive[] = ['a', 'b', '', 'x', 0, 1, 2, -1, 1.5, -0.25, true, false, null]
const typeNames: readonly JsonSchemaTypeName[] = ['string', 'number', 'integer', 'boolean', 'null', 'array', 'object']

/** fast-check's JSON values include -0, which is not lossless JSON: round-trip them. */
const jsonArb = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as JsonValue)

const annotations = fc.record(
  { description: fc.string({ maxLength: 8 }), title: fc.string({ maxLength: 4 }), default: jsonArb },
  { requiredKeys: [] },
)

/** Scalars that fit a type name, for enum/const that are sometimes satisfiable. */
function scalarsFor(type: JsonSchemaTypeName | undefined): readonly JsonPrimitive[] {
  switch (type) {
    case 'string':
      return ['a', 'b', '', 'x']
    case 'number':
      return [0, 1, 1.5, -0.25]
    case 'integer':
      return [0, 1, 2, -1]
    case 'boolean':
      return [true, false]
    case 'null':
      return [null]
    default:
      return scalarPool
  }
}

const schemaArb: fc.Arbitrary<JsonSchemaNode> = fc.letrec<{ node: JsonSchemaNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    // scalar leaves with optional enum / const
    fc
      .record({ type: fc.option(fc.constantFrom(...typeNames.slice(0, 5)), { nil: undefined }), pick: fc.nat(9), extra: annotations })
      .chain(({ type, pick, extra }) => {
        const pool = pick < 7 ? scalarsFor(type) : scalarPool
        const base: Record<string, unknown> = { ...(type === undefined ? {} : { type }), ...extra }
        if (pick < 3) return fc.constant(base as JsonSchemaNode)
        if (pick < 6) return fc.uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: 3 }).map((e) => ({ ...base, enum: e }) as JsonSchemaNode)
        if (pick < 8) return fc.constantFrom(...pool).map((c) => ({ ...base, const: c }) as JsonSchemaNode)
        return fc
          .tuple(fc.uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: 3 }), fc.constantFrom(...pool))
          .map(([e, c]) => ({ ...base, enum: e, const: c }) as JsonSchemaNode)
      }),
    // arrays (typed or type-less), with or without items
    fc
      .record({ typed: fc.boolean(), items: fc.option(tie('node'), { nil: undefined }) }, { requiredKeys: ['typed'] })
      .map(({ typed, items }) => ({ ...(typed ? { type: 'array' as const } : {}), ...(items === undefined ? {} : { items }) })),
    // objects (typed or type-less)
    fc
      .record({
        typed: fc.boolean(),
        props: fc.dictionary(fc.constantFrom(...names), tie('node'), { maxKeys: 3 }),
        required: fc.uniqueArray(fc.constantFrom(...names), { maxLength: 3 }),
        closed: fc.option(fc.boolean(), { nil: undefined }),
        hasProps: fc.boolean(),
      })
      .map(({ typed, props, required, closed, hasProps }) => ({
        ...(typed ? { type: 'object' as const } : {}),
        ...(hasProps ? { properties: props } : {}),
        ...(required.length > 0 ? { required } : {}),
        ...(closed === undefined ? {} : { additionalProperties: closed }),
      })),
    // exact-one oneOf, sometimes with a sibling type
    fc
      .record({ branches: fc.array(tie('node'), { minLength: 1, maxLength: 3 }), type: fc.option(fc.constantFrom(...typeNames), { nil: undefined }) })
      .map(({ branches, type }) => ({ ...(type === undefined ? {} : { type }), oneOf: branches })),
  ),
})).node

const anyValue = fc.oneof(
  fc.constantFrom<JsonValue>(...scalarPool, [], {}, [1], { a: 1 }, { a: 'a', b: null }),
  jsonArb,
)

/** A value for `schema` that is valid more often than not, with occasional mutations. */
function nearValue(schema: JsonSchemaNode, depth = 0): fc.Arbitrary<JsonValue> {
  if (depth > 6) return anyValue
  const candidates: fc.WeightedArbitrary<JsonValue>[] = [{ weight: 1, arbitrary: anyValue }]
  if (schema.enum !== undefined) candidates.push({ weight: 6, arbitrary: fc.constantFrom(...schema.enum) })
  if (schema.const !== undefined) candidates.push({ weight: 6, arbitrary: fc.constant(schema.const) })
  if (schema.oneOf !== undefined) {
    candidates.push({ weight: 6, arbitrary: fc.constantFrom(...schema.oneOf).chain((b) => nearValue(b, depth + 1)) })
  }
  const type = schema.type
  const wantsObject = type === 'object' || (type === undefined && (schema.properties !== undefined || schema.required !== undefined || schema.additionalProperties !== undefined))
  const wantsArray = type === 'array' || (type === undefined && schema.items !== undefined)
  if (wantsObject) {
    const props = schema.properties ?? {}
    const required = new Set(schema.required ?? [])
    const keys = [...new Set([...Object.keys(props), ...required])]
    const entries = keys.map((key) =>
      fc.tuple(
        fc.constant(key),
        fc.nat(9).map((n) => n < (required.has(key) ? 9 : 6)),
        props[key] === undefined ? anyValue : nearValue(props[key]!, depth + 1),
      ),
    )
    const extra = fc.option(fc.tuple(fc.constantFrom(...names), anyValue), { nil: undefined, freq: 4 })
    candidates.push({
      weight: 8,
      arbitrary: fc.tuple(fc.tuple(...entries), extra).map(([es, ex]) => {
        const out: Record<string, JsonValue> = {}
        for (const [key, include, value] of es) if (include) out[key] = value
        if (ex !== undefined && !(ex[0] in out)) out[ex[0]] = ex[1]
        return out
      }),
    })
  }
  if (wantsArray) {
    const items = schema.items
    candidates.push({ weight: 8, arbitrary: fc.array(items === undefined ? anyValue : nearValue(items, depth + 1), { maxLength: 3 }) })
  }
  switch (type) {
    case 'string':
      candidates.push({ weight: 6, arbitrary: fc.constantFrom('a', 'b', 'x', '') })
      break
    case 'number':
      candidates.push({ weight: 6, arbitrary: fc.constantFrom(0, 1, 1.5, -0.25, 2) })
      break
    case 'integer':
      candidates.push({ weight: 6, arbitrary: fc.constantFrom(0, 1, 2, -1, 1.5) })
      break
    case 'boolean':
      candidates.push({ weight: 6, arbitrary: fc.boolean() })
      break
    case 'null':
      candidates.push({ weight: 6, arbitrary: fc.constant(null) })
      break
    default:
      break
  }
  return fc.oneof(...candidates)
}

const pairsPerSchema = 5
const caseArb = schemaArb.chain((schema) => fc.tuple(fc.constant(schema), fc.array(nearValue(schema), { minLength: pairsPerSchema, maxLength: pairsPerSchema })))

const tally = { pairs: 0, accepted: 0, rejected: 0 }

function agrees(schema: JsonSchemaNode, values: readonly JsonValue[]): boolean {
  const ours = compileJsonSchema(schema)
  const theirs = oracle(schema)
  for (const value of values) {
    const expected = theirs(value) === true
    tally.pairs++
    if (expected) tally.accepted++
    else tally.rejected++
    const fast = ours.isValid(value)
    const full = ours.validate(value)
    if (fast !== expected || (full.length === 0) !== expected) {
      throw new Error(
        `disagreement: ajv=${expected} isValid=${fast} validate=${JSON.stringify(full)}\nschema=${JSON.stringify(schema)}\nvalue=${JSON.stringify(value)}`,
      )
    }
  }
  return true
}

describe('differential test against ajv 8', () => {
  it('agrees with ajv on general schemas of the subset', () => {
    fc.assert(fc.property(caseArb, ([schema, values]) => agrees(schema, values)), { numRuns: 1200 })
  })

  it('agrees with ajv on oneOf-rooted schemas', () => {
    const oneOfArb = fc
      .array(schemaArb, { minLength: 1, maxLength: 4 })
      .map((branches): JsonSchemaNode => ({ oneOf: branches }))
      .chain((schema) => fc.tuple(fc.constant(schema), fc.array(nearValue(schema), { minLength: pairsPerSchema, maxLength: pairsPerSchema })))
    fc.assert(fc.property(oneOfArb, ([schema, values]) => agrees(schema, values)), { numRuns: 500 })
  })

  it('agrees with ajv on closed object schemas', () => {
    const closedArb = fc
      .record({ props: fc.dictionary(fc.constantFrom(...names), schemaArb, { maxKeys: 4 }), required: fc.uniqueArray(fc.constantFrom(...names), { maxLength: 3 }) })
      .map(({ props, required }): JsonSchemaNode => ({ type: 'object', properties: props, required, additionalProperties: false }))
      .chain((schema) => fc.tuple(fc.constant(schema), fc.array(nearValue(schema), { minLength: pairsPerSchema, maxLength: pairsPerSchema })))
    fc.assert(fc.property(closedArb, ([schema, values]) => agrees(schema, values)), { numRuns: 400 })
  })

  it('covered at least 10,000 pairs with both outcomes common', () => {
    // The figures travel in the assertion messages: a passing run prints nothing.
    const figures = `${tally.pairs} (schema, value) pairs, ${tally.accepted} accepted, ${tally.rejected} rejected`
    expect(tally.pairs, figures).toBeGreaterThanOrEqual(10_000)
    expect(tally.accepted / tally.pairs, figures).toBeGreaterThan(0.2)
    expect(tally.rejected / tally.pairs, figures).toBeGreaterThan(0.2)
  })
})
