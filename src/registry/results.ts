/**
 * Building, checking and freezing results, content blocks and additional contexts.
 * @module
 */
import { ToolError, toErrorData } from '../errors.js'
import type { ToolErrorCode } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type {
  AdditionalContext,
  ContentBlock,
  ToolExecutionResult,
  ToolFailure,
  ToolFailureInfo,
  ToolSuccess,
} from '../types.js'

/** The error for a malformed block, context or decision. */
function malformed(message: string): ToolError {
  return new ToolError('INVALID_JSON', message)
}

function own(value: object, key: string): unknown {
  const descriptor = Object.getOwnPropertyDescriptor(value, key)
  if (descriptor === undefined) return undefined
  if (!('value' in descriptor)) throw malformed(`${key} must be a data property`)
  return descriptor.value as unknown
}

/** Checks and copies model-facing content into frozen blocks. Throws `ToolError('INVALID_JSON')`. */
export function snapshotContent(content: unknown, what: string): readonly ContentBlock[] {
  if (!Array.isArray(content)) throw malformed(`${what} must be an array of content blocks`)
  const out: ContentBlock[] = []
  for (let i = 0; i < content.length; i++) {
    const block: unknown = content[i]
    if (typeof block !== 'object' || block === null) throw malformed(`${what}[${i}] must be a content block object`)
    const type = own(block, 'type')
    if (type === 'text') {
      const text = own(block, 'text')
      if (typeof text !== 'string') throw malformed(`${what}[${i}].text must be a string`)
      out.push(Object.freeze({ type: 'text', text }))
    } else if (type === 'image') {
      const data = own(block, 'data')
      const mimeType = own(block, 'mimeType')
      if (typeof data !== 'string' || typeof mimeType !== 'string') {
        throw malformed(`${what}[${i}] image blocks need string data and mimeType`)
      }
      out.push(Object.freeze({ type: 'image', data, mimeType }))
    } else {
      throw malformed(`${what}[${i}].type must be 'text' or 'image'`)
    }
  }
  return Object.freeze(out)
}

/** Checks and copies one additional context. Throws `ToolError('INVALID_JSON')` or `LosslessJsonError`. */
export function snapshotContext(context: unknown, what: string): AdditionalContext {
  if (typeof context !== 'object' || context === null) throw malformed(`${what} must be an object`)
  const source = own(context, 'source')
  const text = own(context, 'content')
  const meta = own(context, 'meta')
  if (typeof source !== 'string') throw malformed(`${what}.source must be a string`)
  if (typeof text !== 'string') throw malformed(`${what}.content must be a string`)
  return Object.freeze({
    source,
    content: text,
    ...(meta !== undefined ? { meta: snapshotLosslessJson(meta) } : {}),
  })
}

/** Checks and copies a list of additional contexts. */
export function snapshotContexts(contexts: unknown, what: string): readonly AdditionalContext[] {
  if (!Array.isArray(contexts)) throw malformed(`${what} must be an array`)
  const out: AdditionalContext[] = []
  for (let i = 0; i < contexts.length; i++) out.push(snapshotContext(contexts[i], `${what}[${i}]`))
  return out
}

/** The exact model-facing content of a failure. */
export function failureContent(message: string): readonly ContentBlock[] {
  return Object.freeze([Object.freeze({ type: 'text' as const, text: `Error: ${message}` })])
}

/** A frozen failure with content exactly `Error: <message>`. */
export function failure(
  code: ToolErrorCode | (string & {}),
  message: string,
  contexts: readonly AdditionalContext[] = [],
  name = 'ToolError',
): ToolFailure {
  const info: ToolFailureInfo = Object.freeze({ name, code })
  return Object.freeze({
    isError: true as const,
    error: Object.freeze({ message, info }),
    content: failureContent(message),
    ...(contexts.length > 0 ? { additionalContexts: Object.freeze([...contexts]) } : {}),
  })
}

/**
 * A failure from an arbitrary thrown value: a `ToolError` keeps its own code (a body's
 * `CodeRunFailedError` stays `CODE_RUN_FAILED`); anything else gets `fallback`.
 */
export function failureFromError(
  error: unknown,
  fallback: ToolErrorCode,
  contexts: readonly AdditionalContext[] = [],
  prefix = '',
): ToolFailure {
  const data = toErrorData(error)
  const message = prefix + (data.message === '' ? data.name : data.message)
  if (error instanceof ToolError) return failure(error.code, message, contexts, data.name)
  return failure(fallback, message, contexts, data.name)
}

/** A frozen success. */
export function success(
  value: JsonValue,
  content: readonly ContentBlock[],
  meta: JsonValue | undefined,
  contexts: readonly AdditionalContext[],
): ToolSuccess {
  const result: { -readonly [K in keyof ToolSuccess]: ToolSuccess[K] } = { isError: false, value, content }
  if (meta !== undefined) result.meta = meta
  if (contexts.length > 0) result.additionalContexts = Object.freeze([...contexts])
  return Object.freeze(result)
}

/** The same result with its contexts replaced. */
export function withContexts(result: ToolExecutionResult, contexts: readonly AdditionalContext[]): ToolExecutionResult {
  const { additionalContexts: _dropped, ...rest } = result
  return Object.freeze({ ...rest, ...(contexts.length > 0 ? { additionalContexts: Object.freeze([...contexts]) } : {}) }) as ToolExecutionResult
}

/** The same result with its content replaced (value, meta and contexts kept). */
export function withContent(result: ToolExecutionResult, content: readonly ContentBlock[]): ToolExecutionResult {
  return Object.freeze({ ...result, content }) as ToolExecutionResult
}
