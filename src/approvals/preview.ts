/**
 * Runs a tool's `preview` for a call that asks for approval: bounded in time, never blocking
 * the request, rendered by render.ts.
 *
 * @module
 */
import type { AnyToolDefinition, ToolExecution } from '../types.js'
import { previewUnavailable, renderApprovalPreview } from './render.js'

/** How long a tool's `preview` may take before the request goes on without it, in ms. */
export const PREVIEW_TIMEOUT_MS = 1_000

function reasonOf(error: unknown): string {
  if (error instanceof Error) return `it threw ${error.name}: ${error.message}`
  return `it threw ${typeof error === 'string' ? error : typeof error}`
}

/**
 * The rendered preview of `execution` (a call of `definition` that asks), or `undefined`
 * when the tool has none. Always resolves, within `timeoutMs` (or as soon as `signal`
 * aborts): a throw, a rejection, a non-string answer or no answer in time gives
 * `preview unavailable: <reason>`. The preview's own signal is aborted once it is no
 * longer awaited, so a tool that keeps reading can stop.
 */
export async function previewOfCall(
  definition: Pick<AnyToolDefinition, 'preview'> | undefined,
  execution: Pick<ToolExecution, 'callId' | 'name' | 'agent' | 'arguments'>,
  signal: AbortSignal,
  timeoutMs = PREVIEW_TIMEOUT_MS,
): Promise<string | undefined> {
  const preview = definition?.preview
  if (typeof preview !== 'function') return undefined
  if (signal.aborted) return previewUnavailable('the call was cancelled')
  const controller = new AbortController()
  let stop: (reason: string) => void = () => {}
  const stopped = new Promise<string>((resolve) => (stop = resolve))
  const onAbort = (): void => stop('the call was cancelled')
  signal.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(() => stop(`it did not answer within ${timeoutMs} ms`), timeoutMs)
  try {
    const ctx = { signal: controller.signal, callId: execution.callId, name: execution.name, ...(execution.agent === undefined ? {} : { agent: execution.agent }) }
    const answered = (async () => preview.call(definition, execution.arguments, ctx) as unknown)().then(
      (value) => (typeof value === 'string' ? renderApprovalPreview(value) : previewUnavailable(`it answered ${value === null ? 'null' : typeof value}, not text`)),
      (error: unknown) => previewUnavailable(reasonOf(error)),
    )
    const late = stopped.then((reason) => previewUnavailable(reason))
    return await Promise.race([answered, late])
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
    controller.abort(new Error('the preview is no longer awaited'))
  }
}
