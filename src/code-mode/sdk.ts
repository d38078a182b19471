/**
 * Code Mode SDK rendering: the text a model reads to write a `run_code` program — the usage
 * instructions followed by the typed SDK block in the code runtime's language.
 * @module
 */
import { ToolError } from '../errors.js'
import { renderCatalogSdk, type SdkForm } from './sdk-catalog.js'
import type { SdkToolInput } from './sdk-common.js'
import { renderPythonSdk, renderPythonToolDeclaration } from './sdk-python.js'
import { renderTypeScriptSdk, renderTypeScriptToolDeclaration } from './sdk-typescript.js'

export type { SdkToolInput } from './sdk-common.js'
export type { SdkForm } from './sdk-catalog.js'

/** Options for {@link renderToolsSdk}. */
export interface RenderToolsSdkOptions {
  /** The code runtime's language (`'typescript'` by default; `'python'` is also supported). */
  language?: string
  /** The most characters the text may take (a positive integer, or `Infinity`; default `Infinity`). */
  maxChars?: number
}

/** What {@link renderToolsSdkWithinBudget} rendered. */
export interface SdkWithinBudget {
  readonly text: string
  /** `full`: the whole SDK; `index` / `namespaces`: the catalog form, with tool names or namespaces only. */
  readonly form: SdkForm
  /** Whether `text` is within the budget (false only when not even the instructions and namespaces fit). */
  readonly fits: boolean
}

type SdkRenderer = (tools: readonly SdkToolInput[]) => string

// Null prototype: a language name like `constructor` must not find an inherited member.
const renderers: Readonly<Record<string, SdkRenderer>> = Object.assign(Object.create(null) as Record<string, SdkRenderer>, {
  typescript: renderTypeScriptSdk,
  python: renderPythonSdk,
})

const declarationRenderers: Readonly<Record<string, (tool: SdkToolInput) => string>> = Object.assign(
  Object.create(null) as Record<string, (tool: SdkToolInput) => string>,
  { typescript: renderTypeScriptToolDeclaration, python: renderPythonToolDeclaration },
)

/** Whether {@link renderToolsSdk} can render an SDK for `language`. */
export function hasSdkRenderer(language: string): boolean {
  return typeof language === 'string' && Object.hasOwn(renderers, language)
}

/**
 * Renders the Code Mode SDK text for `tools`: the usage instructions, then the SDK block.
 * @example
 * ```ts
 * const text = renderToolsSdk([{ name: 'read_file', description: 'Read a file', parameters, output }])
 * ```
 */
export function renderToolsSdk(tools: readonly SdkToolInput[], options?: RenderToolsSdkOptions): string {
  return renderToolsSdkWithinBudget(tools, options).text
}

function checkLanguage(language: string): void {
  if (!hasSdkRenderer(language)) {
    throw new ToolError('ASSEMBLY_FAILED', `no Code Mode SDK renderer for language ${JSON.stringify(String(language))}`)
  }
}

/**
 * {@link renderToolsSdk}, telling which form the text took.
 * @example
 * ```ts
 * renderToolsSdkWithinBudget(thousandTools, { maxChars: 12_000 }).form // 'index'
 * renderToolsSdkWithinBudget(fewTools, { maxChars: 12_000 }).form      // 'full'
 * ```
 */
export function renderToolsSdkWithinBudget(tools: readonly SdkToolInput[], options?: RenderToolsSdkOptions): SdkWithinBudget {
  const language = options?.language ?? 'typescript'
  checkLanguage(language)
  const maxChars = options?.maxChars ?? Number.POSITIVE_INFINITY
  if (maxChars !== Number.POSITIVE_INFINITY && (typeof maxChars !== 'number' || !Number.isSafeInteger(maxChars) || maxChars < 1)) {
    throw new ToolError('INVALID_OPTIONS', `renderToolsSdk: maxChars must be a positive integer or Infinity (got ${String(maxChars)})`)
  }
  const full = (renderers[language] as SdkRenderer)(tools)
  if (full.length <= maxChars) return { text: full, form: 'full', fits: true }
  return renderCatalogSdk(tools, { language: language as 'typescript' | 'python', maxChars })
}

/**
 * The declaration of one tool in `language` (default `'typescript'`), as `catalog.search` and
 * `catalog.describe` return it: for TypeScript its JSDoc and `tools` member with the argument and
 * output types the full SDK renders; for Python its TypedDicts and `Tools` member.
 * @example
 * ```ts
 * renderToolDeclaration({ name: 'get_user', description: 'Get a user.', parameters, output })
 * // '/** Get a user. *\/\nget_user(args: {\n  id: string;\n}): Promise<…>;'
 * ```
 */
export function renderToolDeclaration(tool: SdkToolInput, language = 'typescript'): string {
  checkLanguage(language)
  return (declarationRenderers[language] as (tool: SdkToolInput) => string)(tool)
}
