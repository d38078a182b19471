/**
 * Typings for the sucrase 3.35 internals `strip.ts` reads (its parser and token
 * tables). sucrase publishes them as files but not as typed entry points; the package
 * is pinned exactly, and `strip.test` pins the behaviour relied on.
 */
declare module 'sucrase/dist/parser/index.js' {
  export interface SucraseToken {
    readonly type: number
    readonly contextualKeyword: number
    readonly start: number
    readonly end: number
    readonly isType: boolean
  }
  export function parse(input: string, isJSXEnabled: boolean, isTypeScriptEnabled: boolean, isFlowEnabled: boolean): { tokens: SucraseToken[] }
}
declare module 'sucrase/dist/parser/tokenizer/types.js' {
  /** Token type name → numeric id (`_enum`, `parenL`, …). */
  export const TokenType: Readonly<Record<string, number>>
}
declare module 'sucrase/dist/parser/tokenizer/keywords.js' {
  /** Contextual keyword name → numeric id (`_namespace`, `_constructor`, …). */
  export const ContextualKeyword: Readonly<Record<string, number>>
}
declare module 'sucrase/dist/index.js' {
  /** sucrase's `transform`, imported by its CommonJS path like the parser beside it, so a bundle holds one copy of sucrase. */
  export function transform(
    code: string,
    options: { readonly transforms: readonly string[]; readonly disableESTransforms?: boolean; readonly keepUnusedImports?: boolean },
  ): { readonly code: string }
}
