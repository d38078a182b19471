/**
 * Code Mode SDK rendering: the text a model reads to write a `run_code` program — the
 * usage instructions followed by the typed SDK block in the code runtime's language.
 * Rendering is total for any tool set the registry accepts and byte-identical for an
 * unchanged set (tools are sorted by code point).
 *
 * @module
 */
import { ToolError } from '../errors.js'
import type { SdkToolInput } from './sdk-common.js'
import { renderPythonSdk } from './sdk-python.js'
import { renderTypeScriptSdk } from './sdk-typescript.js'

export type { SdkToolInput } from './sdk-common.js'

/** Options for {@link renderToolsSdk}. */
export interface RenderToolsSdkOptions {
  /** The code runtime's language (`'typescript'` by default; `'python'` is also supported). */
  language?: string
}

type SdkRenderer = (tools: readonly SdkToolInput[]) => string

// Null prototype: a language name like `constructor` must not find an inherited member.
const renderers: Readonly<Record<string, SdkRenderer>> = Object.assign(Object.create(null) as Record<string, SdkRenderer>, {
  typescript: renderTypeScriptSdk,
  python: renderPythonSdk,
})

/** Whether {@link renderToolsSdk} can render an SDK for `language`. */
export function hasSdkRenderer(language: string): boolean {
  return typeof language === 'string' && Object.hasOwn(renderers, language)
}

/**
 * Renders the Code Mode SDK text for `tools`: the usage instructions, then the SDK block.
 * Throws `ToolError('ASSEMBLY_FAILED')` only when the language has no renderer; every
 * schema, however exotic, renders (unsupported constructs degrade to `unknown` / `Any`).
 *
 * @example
 * ```ts
 * const text = renderToolsSdk([{ name: 'read_file', description: 'Read a file', parameters, output }])
 * ```
 */
export function renderToolsSdk(tools: readonly SdkToolInput[], options?: RenderToolsSdkOptions): string {
  const language = options?.language ?? 'typescript'
  if (!hasSdkRenderer(language)) {
    throw new ToolError('ASSEMBLY_FAILED', `no Code Mode SDK renderer for language ${JSON.stringify(String(language))}`)
  }
  const render = renderers[language] as SdkRenderer
  return render(tools)
}
