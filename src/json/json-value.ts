/**
 * The JSON value vocabulary shared by every boundary of toolyard: tool arguments,
 * canonical tool outputs, schema annotations and everything that crosses a worker.
 *
 * @module
 */

/** A JSON scalar. */
export type JsonPrimitive = string | number | boolean | null

/** Any JSON value: what survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue }

/** A JSON object (string keys, JSON values). */
export type JsonObject = { [key: string]: JsonValue }

/** A JSON array. */
export type JsonArray = JsonValue[]
