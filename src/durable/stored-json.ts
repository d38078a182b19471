/**
 * The one parse of JSON text read back from a store: short texts at once, longer ones in
 * turn-sliced steps, so no stored record holds the host's event loop for its whole length.
 * @module
 */
import { ADOPT_SLICE_NODES, PARSE_AT_ONCE_CHARS } from '../code-runtime/json-endpoint.js'
import { SlicedJsonParse } from '../code-runtime/sliced-json.js'

/** Lets timers and I/O run (a macrotask: a promise chain alone never yields). */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0))

/**
 * `JSON.parse(text)` for a text another process (or anything with access to the store) wrote:
 * the same value, or a `SyntaxError` where `JSON.parse` throws one. A text longer than
 * {@link PARSE_AT_ONCE_CHARS} is parsed {@link ADOPT_SLICE_NODES} units a turn, yielding to the
 * event loop between turns (a spilled park is up to 256 MiB: one `JSON.parse` of it held the
 * loop for seconds).
 */
export async function parseStoredJson(text: string): Promise<unknown> {
  if (text.length <= PARSE_AT_ONCE_CHARS) return JSON.parse(text)
  const parse = new SlicedJsonParse(text)
  while (!parse.step(ADOPT_SLICE_NODES)) await yieldToLoop()
  if (parse.invalid) throw new SyntaxError('the stored text is not JSON')
  return parse.value
}
