/**
 * Both SDK renderers on one tool set that reaches every rendering rule (see
 * support/sdk-tools.ts): the whole block, exactly. A change to what a model reads must
 * show here.
 */
import { describe, expect, it } from 'vitest'
import { jsonSchemaToPy, renderPythonSdk, renderPythonSdkBlock } from '../../../src/code-mode/sdk-python.js'
import { PYTHON_SDK_INSTRUCTIONS, TYPESCRIPT_SDK_INSTRUCTIONS } from '../../../src/code-mode/sdk-instructions.js'
import { jsonSchemaToTs, renderTypeScriptSdk, renderTypeScriptSdkBlock } from '../../../src/code-mode/sdk-typescript.js'
import { SDK_TOOLS } from './support/sdk-tools.js'

const TS_BLOCK = `type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

interface ToolArgsMap {
  "fetch-url": {
    /** Absolute URL. */
    url: string;
    headers?: {
      accept?: string;
    };
    retries?: 1 | 2;
    flag?: true;
    maybe?: number | {
      deep: number;
      [key: string]: unknown;
    };
  };
  "kw": {
    class: string;
  };
  "no_args": { [key: string]: JsonValue };
  "ping": {
    verbose?: boolean;
    [key: string]: unknown;
  };
  "search": {
    /** What to look for. */
    query: string;
    /**
     * At most this many.
     * Default 10.
     * @deprecated
     */
    limit?: number;
    mode?: "fast" | "exact";
    "dash-key": boolean;
    filters?: (string | null)[];
    exact?: 3;
    raw?: JsonValue;
    anything?: unknown;
  };
}

interface ToolOutputMap {
  "fetch-url": {
    status: number;
  }[];
  "kw": null | false | 1.5 | "x";
  "no_args": null;
  "ping": string | null;
  "search": {
    hits: {
      id: string;
      score?: number;
      [key: string]: unknown;
    }[];
    total?: number;
    tags?: ("a" | "b")[];
    list?: JsonValue[];
    none?: { [key: string]: never };
    open?: { [key: string]: JsonValue };
  };
}

type ToolName = keyof ToolArgsMap;

/** The error a failed tool call rejects with. */
declare class ToolCallError extends Error {
  /** The tool whose call failed. */
  readonly toolName: ToolName | string;
}

declare const tools: {
  /**
   * Fetch a URL.
   * """quoted"""
   */
  "fetch-url"(args: ToolArgsMap["fetch-url"]): Promise<ToolOutputMap["fetch-url"]>;
  /** A field named like a keyword. */
  kw(args: ToolArgsMap["kw"]): Promise<ToolOutputMap["kw"]>;
  /** Takes nothing. */
  no_args(args?: ToolArgsMap["no_args"]): Promise<ToolOutputMap["no_args"]>;
  ping(args?: ToolArgsMap["ping"]): Promise<ToolOutputMap["ping"]>;
  /**
   * Search the index.
   *
   * Returns hits; never *\\/ ends a comment.
   */
  search(args: ToolArgsMap["search"]): Promise<ToolOutputMap["search"]>;
};`

const PY_BLOCK = `from typing import Any, Awaitable, Callable, Literal, Required, TypedDict


class FetchUrlArgsHeaders(TypedDict, total=False):
    accept: str


class FetchUrlArgsMaybeVariant2(TypedDict):
    # May also carry other keys.
    deep: float


class FetchUrlArgs(TypedDict, total=False):
    # Absolute URL.
    url: Required[str]
    headers: FetchUrlArgsHeaders
    retries: Literal[1, 2]
    flag: Literal[True]
    maybe: int | FetchUrlArgsMaybeVariant2


class FetchUrlOutputItem(TypedDict):
    status: int


class PingArgs(TypedDict, total=False):
    # May also carry other keys.
    verbose: bool


class SearchOutputHitsItem(TypedDict, total=False):
    # May also carry other keys.
    id: Required[str]
    score: float


class SearchOutputNone(TypedDict):
    pass


class SearchOutput(TypedDict, total=False):
    hits: Required[list[SearchOutputHitsItem]]
    total: int
    tags: list[Literal["a", "b"]]
    list: list[Any]
    none: SearchOutputNone
    open: dict[str, Any]


class ToolCallError(Exception):
    """A failed tool call: \`tool_name\` names the tool, \`str(error)\` is the message."""

    tool_name: str


class Tools:
    async def kw(self, args: dict[str, Any]) -> Literal[None, False, "x"] | float:
        """A field named like a keyword."""
        ...

    async def no_args(self, args: dict[str, Any] = ...) -> None:
        """Takes nothing."""
        ...

    async def ping(self, args: PingArgs = ...) -> str | None:
        ...

    async def search(self, args: dict[str, Any]) -> SearchOutput:
        """Search the index.

        Returns hits; never */ ends a comment.
        """
        ...

    # Tools whose names are not Python identifiers: call them as tools["name"](args).

    def __getitem__(self, name: Literal["fetch-url"]) -> Callable[[FetchUrlArgs], Awaitable[list[FetchUrlOutputItem]]]:
        """Fetch a URL.
        \\"\\"\\"quoted\\"\\"\\"
        """
        ...


tools: Tools`

describe('the SDK blocks', () => {
  it('TypeScript', () => {
    expect(renderTypeScriptSdkBlock(SDK_TOOLS)).toBe(TS_BLOCK)
    expect(renderTypeScriptSdkBlock([...SDK_TOOLS].reverse())).toBe(TS_BLOCK)
    expect(renderTypeScriptSdk(SDK_TOOLS)).toBe(`${TYPESCRIPT_SDK_INSTRUCTIONS}\n\n\`\`\`ts\n${TS_BLOCK}\n\`\`\`\n`)
  })

  it('Python', () => {
    expect(renderPythonSdkBlock(SDK_TOOLS)).toBe(PY_BLOCK)
    expect(renderPythonSdkBlock([...SDK_TOOLS].reverse())).toBe(PY_BLOCK)
    expect(renderPythonSdk(SDK_TOOLS)).toContain(PY_BLOCK)
    expect(renderPythonSdk(SDK_TOOLS).startsWith(PYTHON_SDK_INSTRUCTIONS)).toBe(true)
  })
})

describe('jsonSchemaToTs: bounds', () => {
  it('indents continuation lines by baseIndent, and puts levels past 16 on one line', () => {
    expect(jsonSchemaToTs({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }, { baseIndent: '>>' })).toBe('{\n>>  a: string;\n>>}')
    let deep: unknown = { type: 'string' }
    for (let i = 0; i < 18; i++) deep = { type: 'object', properties: { k: deep }, additionalProperties: false }
    // Levels 0–15 one property a line; from level 16 the rest of the type on one line.
    let expected = '{ k?: { k?: string } }'
    for (let level = 15; level >= 0; level--) expected = `{\n${'  '.repeat(level + 1)}k?: ${expected};\n${'  '.repeat(level)}}`
    expect(jsonSchemaToTs(deep)).toBe(expected)
    let open: unknown = { type: 'string' }
    for (let i = 0; i < 18; i++) open = { type: 'object', properties: { k: open }, additionalProperties: true }
    expect(jsonSchemaToTs(open)).toContain('k?: { k?: { k?: string; [key: string]: unknown }; [key: string]: unknown };')
  })

  it('renders back edges and nodes past maxNodes as unknown; never throws', () => {
    const cyclic: Record<string, unknown> = { type: 'array' }
    cyclic.items = cyclic
    expect(jsonSchemaToTs(cyclic)).toBe('unknown[]')
    const shared = { type: 'string' }
    expect(jsonSchemaToTs({ oneOf: [shared, shared] })).toBe('string | string')
    expect(jsonSchemaToTs({ oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'null' }] }, { maxNodes: 3 })).toBe('string | number | unknown')
    expect(jsonSchemaToTs({ type: 'string' }, { maxNodes: 0 })).toBe('string')
    expect(jsonSchemaToTs({ type: 'array', items: { enum: [1] } })).toBe('1[]')
    expect(jsonSchemaToTs({ type: 'array', items: { enum: [1, 2] } })).toBe('(1 | 2)[]')
    const hostile = new Proxy({}, { ownKeys: () => { throw new Error('trap') } })
    expect(jsonSchemaToTs(hostile)).toBe('unknown')
  })
})

describe('jsonSchemaToPy: direct calls', () => {
  it('maps each shape, objects to dict without a naming context', () => {
    expect(jsonSchemaToPy({ type: 'integer' })).toBe('int')
    expect(jsonSchemaToPy({ type: 'number' })).toBe('float')
    expect(jsonSchemaToPy({ type: 'string' })).toBe('str')
    expect(jsonSchemaToPy({ type: 'boolean' })).toBe('bool')
    expect(jsonSchemaToPy({ type: 'null' })).toBe('None')
    expect(jsonSchemaToPy({})).toBe('Any')
    expect(jsonSchemaToPy({ $ref: '#' })).toBe('Any')
    expect(jsonSchemaToPy({ type: 'array', items: { type: 'string' } })).toBe('list[str]')
    expect(jsonSchemaToPy({ type: 'object', properties: { a: { type: 'string' } } })).toBe('dict[str, Any]')
    expect(jsonSchemaToPy({ oneOf: [{ type: 'string' }, { type: 'null' }] })).toBe('str | None')
    expect(jsonSchemaToPy({ enum: ['a', 2, true, null] })).toBe('Literal["a", 2, True, None]')
  })
})
