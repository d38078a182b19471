/**
 * Reading a JSON request body under a byte cap, enforced while the bytes arrive (a
 * lying or absent `Content-Length` buys nothing).
 *
 * @module
 */
import { httpErrorResponse } from './http-errors.js'

/** A parsed body, or the error response to answer with. */
export type JsonBodyOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly response: Response }

/** Whether a `Content-Type` header names `application/json` (parameters allowed; a charset must be UTF-8). */
export function isJsonContentType(header: string | null | undefined): boolean {
  if (typeof header !== 'string') return false
  const [type, ...params] = header.split(';')
  if (type?.trim().toLowerCase() !== 'application/json') return false
  for (const param of params) {
    const [key, value] = param.split('=')
    if (key?.trim().toLowerCase() === 'charset') {
      const charset = value?.trim().replace(/^"|"$/g, '').toLowerCase()
      if (charset !== 'utf-8' && charset !== 'utf8') return false
    }
  }
  return true
}

/**
 * Reads and parses `request`'s body as JSON. Answers 415 for another media type, 413
 * once more than `maxBytes` arrive (or a `Content-Length` says they will), 400
 * `INVALID_JSON_BODY` for bytes that are not UTF-8 JSON (an empty body included).
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<JsonBodyOutcome> {
  if (!isJsonContentType(request.headers.get('Content-Type'))) {
    return { ok: false, response: httpErrorResponse('UNSUPPORTED_MEDIA_TYPE', 'the request body must be application/json') }
  }
  const tooLarge = (): JsonBodyOutcome => ({
    ok: false,
    response: httpErrorResponse('PAYLOAD_TOO_LARGE', `the request body exceeds ${maxBytes} bytes`),
  })
  const declared = request.headers.get('Content-Length')
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) {
    await request.body?.cancel().catch(() => {})
    return tooLarge()
  }
  const chunks: Uint8Array[] = []
  let total = 0
  if (request.body !== null) {
    const reader = request.body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > maxBytes) {
        await reader.cancel().catch(() => {})
        return tooLarge()
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
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    return { ok: false, response: httpErrorResponse('INVALID_JSON_BODY', 'the request body is not valid UTF-8') }
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch (error) {
    const detail = error instanceof SyntaxError ? `: ${error.message}` : ''
    return { ok: false, response: httpErrorResponse('INVALID_JSON_BODY', `the request body is not valid JSON${detail}`) }
  }
}
