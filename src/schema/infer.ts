/**
 * Type-level inference from the schema DSL.
 * @module
 */
import type { JsonValue } from '../json/json-value.js'
import type { ValueSchemaSpec } from './dsl.js'

type Fewer = [never, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]

/** The number of container levels inferred exactly before falling back to `JsonValue`. */
export type InferDepth = 16

/** Flattens an intersection into one object type (so equality checks and hovers read cleanly). */
type Simplify<T> = { [K in keyof T]: T[K] } & {}

type RequiredKeys<P> = { [K in keyof P]-?: P[K] extends { readonly required: true } ? K : never }[keyof P]

type ObjectOf<P, D extends number> = string extends keyof P
  ? // A record typed with an index signature (not literal keys): any JSON object.
    { [key: string]: JsonValue }
  : Simplify<
  { -readonly [K in RequiredKeys<P> & string]: InferValue<P[K], D> } & {
    -readonly [K in Exclude<keyof P, RequiredKeys<P>> & string]?: InferValue<P[K], D>
  }
>

type Scalar<S, T> = S extends { readonly const: infer C extends T }
  ? C
  : S extends { readonly enum: readonly (infer E extends T)[] }
    ? E
    : T

/**
 * The TypeScript type of values accepted by a DSL spec `S`.
 * @example
 * ```ts
 * type T = InferValue<{ type: 'array'; items: { type: 'string'; enum: readonly ['a', 'b'] } }>
 * // ('a' | 'b')[]
 * ```
 */
export type InferValue<S, D extends number = InferDepth> = [D] extends [never]
  ? JsonValue
  : // A spec typed only as the whole DSL union (not a literal) says nothing more precise.
    [ValueSchemaSpec] extends [S]
    ? JsonValue
    : S extends { readonly oneOf: readonly (infer B)[] }
    ? B extends unknown
      ? InferValue<B, Fewer[D]>
      : never
    : S extends { readonly type: infer T }
      ? T extends 'string'
        ? Scalar<S, string>
        : T extends 'number' | 'integer'
          ? Scalar<S, number>
          : T extends 'boolean'
            ? Scalar<S, boolean>
            : T extends 'null'
              ? null
              : T extends 'json'
                ? JsonValue
                : T extends 'array'
                  ? S extends { readonly items: infer I }
                    ? InferValue<I, Fewer[D]>[]
                    : JsonValue[]
                  : T extends 'object'
                    ? S extends { readonly properties: infer P }
                      ? ObjectOf<P, Fewer[D]>
                      : S extends { readonly additionalProperties: false }
                        ? Record<string, never>
                        : { [key: string]: JsonValue }
                    : JsonValue
      : JsonValue

/**
 * The TypeScript type of a tool's arguments from its `ParameterSchemaSpec`: a property
 * with `required: true` is required, every other one optional.
 *
 * @example
 * ```ts
 * type A = InferArgs<{ path: { type: 'string'; required: true }; offset: { type: 'number' } }>
 * // { path: string; offset?: number }
 * ```
 */
export type InferArgs<P> = ObjectOf<P, Fewer[InferDepth]>
