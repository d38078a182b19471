/**
 * The catalog form of the Code Mode SDK: what `tools:sdk` carries instead of the full SDK when the
 * full SDK would not fit the registry's budget (`sdkBudgetChars`).
 * @module
 */
import { renderCatalogIndex, type CatalogIndexForm, type CatalogIndexText } from '../catalog/index-text.js'
import { normalizeSdkTools, type SdkToolInput } from './sdk-common.js'
import { PYTHON_SDK_INSTRUCTIONS, TYPESCRIPT_SDK_INSTRUCTIONS } from './sdk-instructions.js'

/** The share of the budget the catalog form aims for. */
export const CATALOG_FORM_SHARE = 0.5

/** The default number of hits `catalog.search` returns inside a program. */
export const CATALOG_SEARCH_DEFAULT_LIMIT = 5

/** Which form the SDK section took: the whole SDK, or the catalog form (with names, or namespaces only). */
export type SdkForm = 'full' | CatalogIndexForm

/** The catalog form as rendered. */
export interface CatalogSdkText {
  readonly text: string
  /** `index` when the index lists tool names, `namespaces` when it lists namespaces only. */
  readonly form: CatalogIndexForm
  /** Whether `text` is within `maxChars` (false only when the instructions and the namespaces alone exceed it). */
  readonly fits: boolean
}

type CatalogLanguage = 'typescript' | 'python'

function instructionsFor(language: CatalogLanguage): string {
  const text =
    language === 'python'
      ? PYTHON_SDK_INSTRUCTIONS.replace('(the `...Output` TypedDicts below)', '(its declaration: `await catalog.describe(name)`)')
      : TYPESCRIPT_SDK_INSTRUCTIONS.replace('(`ToolOutputMap` below)', '(its declaration: `await catalog.describe(name)`)')
  return text.replace(/\n+The available tools:$/, '')
}

const TYPESCRIPT_CATALOG_BLOCK = `type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** The error a failed tool call rejects with. */
declare class ToolCallError extends Error {
  /** The tool whose call failed (\`catalog.search\` / \`catalog.describe\` when a catalog call fails). */
  readonly toolName: string;
  /** Why: DENIED_BY_GATE, INVALID_ARGS, TOOL_FAILED, … */
  readonly code: string;
}

interface CatalogHit {
  name: string;
  description: string;
  /** The tool's TypeScript declaration: its arguments and output. */
  declaration: string;
}

declare const catalog: {
  /** The tools matching \`query\` (plain words), best first: ${CATALOG_SEARCH_DEFAULT_LIMIT} unless \`limit\` says otherwise. */
  search(query: string, options?: { limit?: number }): Promise<CatalogHit[]>;
  /** The declaration of the tool \`name\`; rejects with ToolCallError naming the closest names when no tool has it. */
  describe(name: string): Promise<string>;
};

/** Every tool of the catalog, by name; its declaration gives the types of \`args\` and of the result. */
declare const tools: { [name: string]: (args?: { [key: string]: JsonValue }) => Promise<any> };`

const PYTHON_CATALOG_BLOCK = `from typing import Any, Awaitable, Callable, TypedDict


class ToolCallError(Exception):
    """A failed tool call: \`tool_name\` names the tool, \`code\` says why, \`str(error)\` is the message."""

    tool_name: str
    code: str


class CatalogHit(TypedDict):
    name: str
    description: str
    # The tool's Python declaration: its arguments and output.
    declaration: str


class CatalogSearchOptions(TypedDict, total=False):
    limit: int


class Catalog:
    async def search(self, query: str, options: CatalogSearchOptions = ...) -> list[CatalogHit]:
        """The tools matching \`query\` (plain words), best first: ${CATALOG_SEARCH_DEFAULT_LIMIT} unless \`limit\` says otherwise."""
        ...

    async def describe(self, name: str) -> str:
        """The declaration of the tool \`name\`; raises ToolCallError naming the closest names when no tool has it."""
        ...


class Tools:
    """Every tool of the catalog: \`await tools.name(args)\`, or \`await tools["name"](args)\` for other names."""

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]: ...

    def __getitem__(self, name: str) -> Callable[..., Awaitable[Any]]: ...


catalog: Catalog
tools: Tools`

/** The fixed text around the index: the instructions before it, the declarations after it. */
function frame(language: CatalogLanguage): { head: string; tail: string } {
  const block = language === 'python' ? `\`\`\`python\n${PYTHON_CATALOG_BLOCK}\n\`\`\`\n` : `\`\`\`ts\n${TYPESCRIPT_CATALOG_BLOCK}\n\`\`\`\n`
  return { head: `${instructionsFor(language)}\n\n`, tail: `\n\n${block}` }
}

/**
 * Renders the catalog form of the SDK for `tools` within `maxChars` (a positive integer): the
 * instructions, the index and the `catalog` / `tools` declarations.
 * @example
 * ```ts
 * const { text, form } = renderCatalogSdk(thousandTools, { language: 'typescript', maxChars: 12_000 })
 * // form === 'index'; text.length <= 6_000; text declares `catalog.search` and `catalog.describe`
 * ```
 */
export function renderCatalogSdk(tools: readonly SdkToolInput[], options: { readonly language: CatalogLanguage; readonly maxChars: number }): CatalogSdkText {
  const { language, maxChars } = options
  const { head, tail } = frame(language)
  const names = normalizeSdkTools(tools).map((tool) => ({ name: tool.name }))
  const rooms = [Math.floor(maxChars * CATALOG_FORM_SHARE), maxChars].map((target) => target - head.length - tail.length).filter((room) => room >= 1)
  let chosen: CatalogIndexText | undefined
  for (const room of rooms) {
    chosen = renderCatalogIndex(names, { maxChars: room, language })
    if (chosen.fits) break
  }
  chosen ??= renderCatalogIndex(names, { maxChars: 1, language })
  const text = `${head}${chosen.text}${tail}`
  return { text, form: chosen.form, fits: text.length <= maxChars }
}
