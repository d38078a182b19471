import { expect } from 'vitest'
import { ToolError } from '../../src/errors.js'
import type { ToolErrorCode } from '../../src/errors.js'

/**
 * Runs `fn` and returns the message of the `ToolError` it throws, after asserting the
 * error's class and `code`; `undefined` when it does not throw. The refusal tests compare
 * the exact message an integrator reads, so a wrong code or a silent acceptance fails.
 */
export function refusalMessage(code: ToolErrorCode, fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    expect((error as ToolError).code).toBe(code)
    return (error as Error).message
  }
  return undefined
}
