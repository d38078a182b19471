import { expect } from 'vitest'
import { ToolError } from '../../src/errors.js'
import type { ToolErrorCode } from '../../src/errors.js'

/**
 * Runs `fn` and returns the message of the `ToolError` it throws, after asserting the
 * error's class and `code`; `undefined` when it does not throw. The refusal tests compare
 * the exact message an integrator reads, so a wrong code or a silent acceptance fails.
 */
export function refusalMessage(code: ToolErrorCode, fn: () => unknown): string | undefined {
  const thrown = thrownToolError(fn)
  if (thrown !== undefined) expect(thrown.code).toBe(code)
  return thrown?.message
}

/**
 * Runs `fn` and returns the code and message of the `ToolError` it throws (asserting the
 * class), or `undefined` when it does not throw: for tests that compare both at once.
 */
export function thrownToolError(fn: () => unknown): { code: string; message: string } | undefined {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    return { code: (error as ToolError).code, message: (error as Error).message }
  }
  return undefined
}
