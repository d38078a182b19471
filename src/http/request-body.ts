/**
 * Reading a JSON request body under a byte cap, enforced while the bytes arrive (a lying or absent
 * `Content-Length` buys nothing).
 * @module
 */
import { HttpError } from './http-errors.js'
import { scanJsonText } from '../json/scan.js'

/** The default body cap of the API and the MCP endpoint: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** The deepest a JSON request body may nest (tool arguments sit two or three levels down). */
export const MAX_BODY_DEPTH = 128

/**
 * The most JSON values (objects, arrays, strings, numbers, literals; object keys count one each) a
 * request body may hold: the bound a program's binding call has (`MAX_CALL_ARG_NODES`), for the
 * same reason.
 */
export const MAX_BODY_VALUES = 100_000

/** Validates a `maxBodyBytes` option (a positive safe integer; absent → {@link DEFAULT_MAX_BODY_BYTES}). */
export function resolveMaxBodyBytes(value: unknown, fail: (message: string) => never): number {
  const resolved = value ?? DEFAULT_MAX_BODY_BYTES
  if (!Number.isSafeInteger(resolved) || (resolved as number) <= 0) fail('maxBodyBytes must be a positive integer')
  return resolved as number
}

/** Whether a `Content-Type` header names `application/json` (parameters allowed; a charset must be UTF-8). */
export function isJsonContentType(header: string | null | undefined): boolean {
  if (typeof header !== 'string') return false
  const [type, ...params] = header.split(';')
  // Stryker disable next-line OptionalChaining: split() always yields a first element
  if (type?.trim().toLowerCase() !== 'application/json') return false
  for (const param of params) {
    const [key, value] = param.split('=')
    // Stryker disable next-line OptionalChaining: split() always yields a first element
    if (key?.trim().toLowerCase() === 'charset') {
      const charset = value?.trim().replace(/^"|"$/g, '').toLowerCase()
      if (charset !== 'utf-8' && charset !== 'utf8') return false
    }
  }
  return true
}

async function discard(cancel: () => Promise<void>): Promise<void> {
  try {
    await cancel()
  } catch {
    // A body that already errored or was closed by the client cannot be cancelled; it is dropped either way.
  }
}

async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let total = 0
  if (body !== null) {
    const reader = body.getReader()
    for (;;) {
      let read: ReadableStreamReadResult<Uint8Array>
      try {
        read = await reader.read()
      } catch {
        // The client went away mid-body (or the server timed the request out): not our
        // failure, so not a 500 and not a line in the server's error log per dropped client.
        throw new HttpError('INVALID_REQUEST', 'the request body did not arrive whole: the connection failed while it was read')
      }
      const { done, value } = read
      if (done) break
      total += value.byteLength
      if (total > maxBytes) {
        await discard(() => reader.cancel())
        throw tooLarge(maxBytes)
      }
      chunks.push(value)
    }
  }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError('PAYLOAD_TOO_LARGE', `the request body exceeds ${maxBytes} bytes`)
}

/**
 * Reads and parses `request`'s body as JSON.
 * @example
 * ```ts
 * const body = await readJsonBody(c.req.raw, 1024 * 1024)
 * ```
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  if (!isJsonContentType(request.headers.get('Content-Type'))) {
    throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be application/json')
  }
  const declared = request.headers.get('Content-Length')
  // Stryker disable next-line MethodExpression: Headers already strips a value's surrounding whitespace
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) {
    const body = request.body
    // Stryker disable next-line ConditionalExpression: discard() swallows the TypeError a null body's cancel would throw
    if (body !== null) await discard(() => body.cancel())
    throw tooLarge(maxBytes)
  }
  const bytes = await readCapped(request.body, maxBytes)
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    // The decoder's own message says nothing more than this one.
    throw new HttpError('INVALID_JSON_BODY', 'the request body is not valid UTF-8')
  }
  // One pass over the text bounds the work of everything after it (parse, checks,
  // snapshots): exact for JSON (brackets outside strings), a bound for anything else.
  const scan = scanJsonText(text, 0, text.length, MAX_BODY_VALUES, MAX_BODY_DEPTH)
  if (scan.depth > MAX_BODY_DEPTH) {
    throw new HttpError('INVALID_JSON_BODY', `the request body nests deeper than ${MAX_BODY_DEPTH} levels`)
  }
  if (scan.nodes > MAX_BODY_VALUES) {
    throw new HttpError(
      'INVALID_JSON_BODY',
      `the request body holds more than ${MAX_BODY_VALUES} JSON values (object keys count); send fewer values per request, or data as one string`,
    )
  }
  let value: unknown
  try {
    value = JSON.parse(text) as unknown
  } catch (error) {
    // Stryker disable next-line StringLiteral: JSON.parse of a string throws only SyntaxError
    const detail = error instanceof SyntaxError ? `: ${error.message}` : ''
    throw new HttpError('INVALID_JSON_BODY', `the request body is not valid JSON${detail}`)
  }
  return value
}

export { unknownFieldMessage } from '../util/unknown-field.js'
