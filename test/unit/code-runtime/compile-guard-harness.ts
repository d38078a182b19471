/**
 * The compile guard (src/code-runtime/in-sandbox/compile-guard.ts) installed in this thread's
 * realm. QuickJS sandboxes run a bundled copy of the module, so the source itself is only
 * exercised here. `guardCompilers` replaces `eval`, `Function` and the `constructor` slot of
 * the four function prototypes: {@link saveCompilers} takes them, and its `restore` puts this
 * realm's own back (also after `install` of quickjs-entry, which calls the guard).
 */

/** This realm's own constructors, taken when this module loads (before any guard). */
export const NATIVE_COMPILERS = [
  Function,
  Object.getPrototypeOf(async function () {}).constructor,
  Object.getPrototypeOf(function* () {}).constructor,
  Object.getPrototypeOf(async function* () {}).constructor,
] as ReadonlyArray<new (...args: string[]) => (...args: unknown[]) => unknown>

/** This realm's own `eval`. */
export const NATIVE_EVAL = globalThis.eval

type Saved = ReadonlyArray<readonly [object, PropertyKey, PropertyDescriptor | undefined]>

/** What the guard writes, as it is now: `restore()` puts it back. */
export function saveCompilers(): { restore(): void } {
  const saved: Saved = [
    [globalThis, 'eval', Object.getOwnPropertyDescriptor(globalThis, 'eval')],
    [globalThis, 'Function', Object.getOwnPropertyDescriptor(globalThis, 'Function')],
    ...NATIVE_COMPILERS.map((native) => [native.prototype as object, 'constructor', Object.getOwnPropertyDescriptor(native.prototype, 'constructor')] as const),
  ]
  return {
    restore() {
      for (const [target, key, descriptor] of saved) {
        if (descriptor === undefined) Reflect.deleteProperty(target, key)
        else Object.defineProperty(target, key, descriptor)
      }
    },
  }
}

/** Whether this realm's compilers are its own (no guard left installed). */
export function compilersAreNative(): boolean {
  return (
    globalThis.eval === NATIVE_EVAL &&
    (globalThis.Function as unknown) === NATIVE_COMPILERS[0] &&
    NATIVE_COMPILERS.every((native) => (native.prototype as { constructor: unknown }).constructor === native)
  )
}
