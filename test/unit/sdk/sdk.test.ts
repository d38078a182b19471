import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { hasSdkRenderer, renderToolsSdk, type SdkToolInput } from '../../../src/code-mode/sdk.js'
import { renderTypeScriptSdkBlock, jsonSchemaToTs, renderTypeScriptSdk } from '../../../src/code-mode/sdk-typescript.js'
import { renderPythonSdkBlock, jsonSchemaToPy, renderPythonSdk } from '../../../src/code-mode/sdk-python.js'
import { PYTHON_SDK_INSTRUCTIONS, TYPESCRIPT_SDK_INSTRUCTIONS } from '../../../src/code-mode/sdk-instructions.js'
import { SDK_TOOLS } from '../code-mode/support/sdk-tools.js'
import fc from 'fast-check'
import { commentLines, compareCodePoints, normalizeSdkTools } from '../../../src/code-mode/sdk-common.js'

const tools: SdkToolInput[] = [
  { name: 'b', description: 'B', parameters: { type: 'object', properties: { x: { type: 'string' } }, required: ['x'] }, output: { type: 'number' } },
  { name: 'a-b', description: 'A', parameters: { type: 'object' }, output: {} },
]

describe('renderToolsSdk', () => {
  it('renders TypeScript by default: the instructions, then the fenced SDK block', () => {
    const text = renderToolsSdk(tools)
    expect(text.startsWith('## Writing code for run_code\n')).toBe(true)
    expect(text).toContain('The available tools:\n\n```ts\n')
    expect(text).toContain(renderTypeScriptSdkBlock(tools))
    expect(text.indexOf('## Writing code')).toBeLessThan(text.indexOf('declare const tools'))
    expect(renderToolsSdk(tools, { language: 'typescript' })).toBe(text)
    expect(renderToolsSdk(tools, {})).toBe(text)
  })

  it('tells the model the truth about the runtime', () => {
    const text = renderToolsSdk(tools)
    for (const claim of [
      'body of an async TypeScript function',
      'erasable syntax only',
      '`enum`',
      '`namespace`',
      '`description`',
      'lossless JSON',
      'ToolCallError',
      '`toolName`',
      'Promise.all',
      'in the order you made them',
      'console.log',
      'ONLY what you print or return comes back',
      'Reach the outside world only through `tools`',
      'tools["my-tool"](args)',
      'passes `{}`',
    ]) {
      expect(text).toContain(claim)
    }
  })

  it('renders Python with Python-flavoured instructions', () => {
    const text = renderToolsSdk(tools, { language: 'python' })
    expect(text).toContain('body of an async Python function')
    expect(text).toContain('print(...)')
    expect(text).toContain('await tools["my-tool"](args)')
    expect(text).toContain('`tool_name`')
    expect(text).toContain('```python\n')
    expect(text).toContain(renderPythonSdkBlock(tools))
    expect(text).not.toContain('declare const tools')
  })

  it('is byte-identical across calls and input orders', () => {
    for (const language of ['typescript', 'python']) {
      expect(renderToolsSdk([...tools].reverse(), { language })).toBe(renderToolsSdk(tools, { language }))
    }
  })

  it.each(['javascript', 'Python', '', 'constructor', '__proto__', 'toString'])('throws ASSEMBLY_FAILED for language %j', (language) => {
    expect(hasSdkRenderer(language)).toBe(false)
    let caught: unknown
    try {
      renderToolsSdk(tools, { language })
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(ToolError)
    expect((caught as ToolError).code).toBe('ASSEMBLY_FAILED')
    expect((caught as ToolError).message).toContain(JSON.stringify(language))
  })

  it('knows its renderers', () => {
    expect(hasSdkRenderer('typescript')).toBe(true)
    expect(hasSdkRenderer('python')).toBe(true)
    expect(hasSdkRenderer(42 as unknown as string)).toBe(false)
  })

  it('renders an empty tool set', () => {
    expect(renderToolsSdk([])).toContain('declare const tools: {\n};')
    expect(renderToolsSdk([], { language: 'python' })).toContain('class Tools:\n    pass')
  })

  it('never throws for garbage schemas in any renderer', () => {
    const garbage = [
      { name: 'g', description: 7, parameters: 'nope', output: [1, 2] },
      { name: 'h', description: null, parameters: { type: 'object', properties: { a: { get type(): never { throw new Error('x') } } } }, output: null },
    ] as unknown as SdkToolInput[]
    expect(renderToolsSdk(garbage)).toContain('g(args: ToolArgsMap["g"])')
    expect(renderToolsSdk(garbage, { language: 'python' })).toContain('async def g(self, args: Any) -> Any:')
  })
})

/*
 * Both SDK renderers on one tool set that reaches every rendering rule (see
 * support/sdk-tools.ts): the whole block, exactly. A change to what a model reads must
 * show here.
 */
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
  /** Why: DENIED_BY_GATE, INVALID_ARGS, TOOL_FAILED, … */
  readonly code: string;
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
    verbose: bool


class SearchOutputHitsItem(TypedDict, total=False):
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
    """A failed tool call: \`tool_name\` names the tool, \`code\` says why, \`str(error)\` is the message."""

    tool_name: str
    code: str


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

/*
 * What both SDK renderers share, as units: code-point order, tool-set normalization and
 * comment lines; and the language dispatch of `renderToolsSdk`.
 */
const byCodePoints = (a: string, b: string): number => {
  const x = [...a].map((c) => c.codePointAt(0)!)
  const y = [...b].map((c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1
  return Math.sign(x.length - y.length)
}

describe('compareCodePoints', () => {
  it('orders by code point, astral characters after the BMP (unlike UTF-16 order)', () => {
    expect(compareCodePoints('a', 'b')).toBe(-1)
    expect(compareCodePoints('b', 'a')).toBe(1)
    expect(compareCodePoints('ab', 'ab')).toBe(0)
    expect(compareCodePoints('a', 'ab')).toBe(-1)
    expect(compareCodePoints('ab', 'a')).toBe(1)
    expect(compareCodePoints('', '')).toBe(0)
    expect(compareCodePoints('\uffff', '😀')).toBe(-1)
    expect(compareCodePoints('😀', '\uffff')).toBe(1)
    expect(compareCodePoints('😀a', '😀b')).toBe(-1)
    expect(compareCodePoints('😀', '😀x')).toBe(-1)
    expect(compareCodePoints('x😀', 'x😀')).toBe(0)
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 6 }), (a, b) => {
        expect(compareCodePoints(a, b)).toBe(byCodePoints(a, b))
      }),
      { numRuns: 500 },
    )
  })
})

describe('normalizeSdkTools', () => {
  const tool = (name: string, extra: Partial<SdkToolInput> = {}): SdkToolInput => ({ name, description: `about ${name}`, parameters: { type: 'object' }, output: {}, ...extra })

  it('sorts by name, keeps the first of a repeated name, and defaults a missing description', () => {
    const first = tool('b')
    const out = normalizeSdkTools([first, tool('a'), tool('b', { description: 'second' }), { ...tool('c'), description: 7 } as never])
    expect(out.map((t) => t.name)).toEqual(['a', 'b', 'c'])
    expect(out[1]).toEqual(first)
    expect(out[1]).not.toBe(first)
    expect(out[2]!.description).toBe('')
  })

  it('drops malformed entries and survives hostile ones', () => {
    const hostile = new Proxy({}, {
      get() {
        throw new Error('trap')
      },
    })
    expect(normalizeSdkTools([null, 'x', { name: 3 }, [tool('arr')], hostile, tool('ok')] as never).map((t) => t.name)).toEqual(['ok'])
    expect(normalizeSdkTools('tools' as never)).toEqual([])
    const throwing = new Proxy([tool('x')], {
      get(target, key, receiver) {
        if (key === 'length') throw new Error('trap')
        return Reflect.get(target, key, receiver) as unknown
      },
    })
    expect(normalizeSdkTools(throwing)).toEqual([])
  })
})

describe('commentLines', () => {
  it('splits on every line terminator, trims line ends and drops blank edges', () => {
    expect(commentLines('a\r\nb\rc\nd\u2028e\u2029f')).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
    expect(commentLines('\n\n  keep leading space  \n\nsecond \n\n')).toEqual(['  keep leading space', '', 'second'])
    expect(commentLines('')).toEqual([])
    expect(commentLines('\n \n')).toEqual([])
  })
})

describe('renderToolsSdk', () => {
  const tools: SdkToolInput[] = [{ name: 'echo', description: 'Echo.', parameters: { type: 'object', properties: { text: { type: 'string' } } }, output: { type: 'string' } }]

  it('dispatches to the language renderer, TypeScript by default', () => {
    expect(renderToolsSdk(tools)).toBe(renderTypeScriptSdk(tools))
    expect(renderToolsSdk(tools, {})).toBe(renderTypeScriptSdk(tools))
    expect(renderToolsSdk(tools, { language: 'python' })).toBe(renderPythonSdk(tools))
    expect(renderToolsSdk(tools, { language: 'typescript' })).not.toBe(renderPythonSdk(tools))
  })

  it('knows exactly its two languages; an inherited name is not one', () => {
    expect(hasSdkRenderer('typescript')).toBe(true)
    expect(hasSdkRenderer('python')).toBe(true)
    for (const language of ['constructor', 'toString', '__proto__', 'TypeScript', '']) expect(hasSdkRenderer(language)).toBe(false)
    expect(hasSdkRenderer(5 as never)).toBe(false)
    try {
      renderToolsSdk(tools, { language: 'constructor' })
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(ToolError)
      expect((error as ToolError).code).toBe('ASSEMBLY_FAILED')
      expect((error as Error).message).toBe('no Code Mode SDK renderer for language "constructor"')
    }
  })
})

describe('the renderers at their edges', () => {
  it('compareCodePoints: a prefix sorts first, equal strings are equal, and U+FFFF is one code point', () => {
    expect(compareCodePoints('ab', 'abc')).toBe(-1)
    expect(compareCodePoints('abc', 'ab')).toBe(1)
    expect(compareCodePoints('same', 'same')).toBe(0)
    expect(compareCodePoints('\uffffa', '\uffffb')).toBe(-1)
    expect(compareCodePoints('\uffffb', '\uffffa')).toBe(1)
  })

  it('hasSdkRenderer: only a string names a language, whatever it converts to', () => {
    expect(hasSdkRenderer({ toString: () => 'python' } as never)).toBe(false)
    expect(hasSdkRenderer('python')).toBe(true)
  })

  it('maxChars: 1 is a budget; 0 is refused with the exact message', async () => {
    const { renderToolsSdkWithinBudget } = await import('../../../src/code-mode/sdk.js')
    expect(renderToolsSdkWithinBudget([], { maxChars: 1 }).fits).toBe(false)
    expect(() => renderToolsSdkWithinBudget([], { maxChars: 0 })).toThrow(new ToolError('INVALID_OPTIONS', 'renderToolsSdk: maxChars must be a positive integer or Infinity (got 0)'))
  })

  it('the catalog form keeps the language’s own instructions, without the lead-in to the SDK block', async () => {
    const { renderCatalogSdk } = await import('../../../src/code-mode/sdk-catalog.js')
    const tools: readonly SdkToolInput[] = [{ name: 'a_tool', description: 'A.', parameters: { type: 'object' }, output: {} }]
    const ts = renderCatalogSdk(tools, { language: 'typescript', maxChars: 100_000 }).text
    const py = renderCatalogSdk(tools, { language: 'python', maxChars: 100_000 }).text
    const lead = (instructions: string) => instructions.replace(/\n+The available tools:$/, '').slice(0, 200)
    expect(ts.startsWith(lead(TYPESCRIPT_SDK_INSTRUCTIONS))).toBe(true)
    expect(py.startsWith(lead(PYTHON_SDK_INSTRUCTIONS))).toBe(true)
    for (const text of [ts, py]) {
      expect(text).not.toContain('The available tools:')
      expect(text).not.toContain('Stryker')
    }
    const head = TYPESCRIPT_SDK_INSTRUCTIONS.replace('(`ToolOutputMap` below)', '(its declaration: `await catalog.describe(name)`)').replace(/\n+The available tools:$/, '')
    expect(ts.startsWith(`${head}\n\n`)).toBe(true)
    expect(ts.charAt(head.length + 2)).not.toBe('\n')
  })

  it('jsonSchemaToTs: maxNodes 1 renders only the root; 0 or less falls back to the default', () => {
    const list = { type: 'array', items: { type: 'string' } }
    expect(jsonSchemaToTs(list, { maxNodes: 1 })).toBe('unknown[]')
    expect(jsonSchemaToTs(list, { maxNodes: 2 })).toBe('string[]')
    expect(jsonSchemaToTs(list, { maxNodes: 0 })).toBe('string[]')
  })

  it('jsonSchemaToPy: fractional enum members widen to float without an empty Literal', () => {
    expect(jsonSchemaToPy({ enum: [1.5, 2.5] })).toBe('float')
    expect(jsonSchemaToPy({ enum: [1, 1.5] })).toBe('Literal[1] | float')
  })

  it('Python class names: a digit inside a name is no leading digit', () => {
    const block = renderPythonSdkBlock([{ name: 'get_v2', description: 'd', parameters: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }, output: {} }])
    expect(block).toContain('class GetV2Args(TypedDict')
    expect(block).not.toContain('TGetV2')
  })
})
