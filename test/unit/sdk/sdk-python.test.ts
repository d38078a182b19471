import { spawnSync } from 'node:child_process'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { jsonSchemaToPy, renderPythonSdkBlock, renderPythonToolDeclaration } from '../../../src/code-mode/sdk-python.js'
import type { SdkToolInput } from '../../../src/code-mode/sdk.js'

const obj = (properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
  ...extra,
})
const tool = (name: string, parameters: unknown = obj({}), output: unknown = { type: 'string' }, description = `The ${name} tool.`): SdkToolInput =>
  ({ name, description, parameters, output }) as SdkToolInput

describe('jsonSchemaToPy: the codegen table', () => {
  const table: [string, unknown, string][] = [
    ['string', { type: 'string' }, 'str'],
    ['number', { type: 'number' }, 'float'],
    ['integer', { type: 'integer' }, 'int'],
    ['boolean', { type: 'boolean' }, 'bool'],
    ['null', { type: 'null' }, 'None'],
    ['enum → Literal', { enum: ['a', 1, true, false, null] }, 'Literal["a", 1, True, False, None]'],
    ['fractional enum members widen to float', { enum: ['a', 1.5] }, 'Literal["a"] | float'],
    ['large integers print exactly', { const: 1e21 }, 'Literal[1000000000000000000000]'],
    ['const', { const: 'x' }, 'Literal["x"]'],
    ['empty enum → Never', { enum: [] }, 'Never'],
    ['array', { type: 'array', items: { type: 'integer' } }, 'list[int]'],
    ['array without items', { type: 'array' }, 'list[Any]'],
    ['oneOf', { oneOf: [{ type: 'string' }, { type: 'null' }] }, 'str | None'],
    ['annotation-only', { description: 'x' }, 'Any'],
    ['unsupported $ref', { $ref: '#' }, 'Any'],
    ['unsupported anyOf', { anyOf: [] }, 'Any'],
    ['unsupported type array', { type: ['string'] }, 'Any'],
    ['garbage', 42, 'Any'],
    ['objects without naming context → dict', obj({ a: { type: 'string' } }, ['a']), 'dict[str, Any]'],
    ['open object → dict', { type: 'object' }, 'dict[str, Any]'],
    ['nested list of objects', { type: 'array', items: obj({}) }, 'list[dict[str, Any]]'],
  ]
  it.each(table)('%s', (_name, schema, expected) => {
    expect(jsonSchemaToPy(schema)).toBe(expected)
  })

  it('is total for arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(typeof jsonSchemaToPy(value)).toBe('string')
      }),
      { numRuns: 1000 },
    )
  })

  it('survives hostile and cyclic input', () => {
    const getter = { get type(): string { throw new Error('boom') } }
    expect(jsonSchemaToPy(getter)).toBe('Any')
    const list: Record<string, unknown> = { type: 'array' }
    list['items'] = list
    expect(jsonSchemaToPy(list)).toBe('list[Any]')
  })

  it('renders 100,000-deep schemas without RangeError', () => {
    let array: unknown = { type: 'string' }
    for (let i = 0; i < 100_000; i++) array = { type: 'array', items: array }
    expect(jsonSchemaToPy(array)).toBe(`${'list['.repeat(100_000)}str${']'.repeat(100_000)}`)
  })
})

describe('renderPythonSdkBlock', () => {
  const tools = [
    tool(
      'read_file',
      obj(
        {
          path: { type: 'string', description: 'Path to read.' },
          offset: { type: 'integer' },
          options: obj({ encoding: { enum: ['utf8', 'latin1'] } }, ['encoding']),
        },
        ['path'],
      ),
      obj({ lines: { type: 'array', items: obj({ n: { type: 'integer' }, text: { type: 'string' } }, ['n', 'text']) } }, ['lines']),
      'Read a file.\nWith "quotes" and a \\ backslash.',
    ),
    tool('my-tool', { type: 'object', properties: { 'bad-key': { type: 'string' } } }),
    tool('class'),
    tool('list_all'),
  ]
  const text = renderPythonSdkBlock(tools)

  it('names TypedDicts from the tool name, nested ones derived, declared before use', () => {
    expect(text).toContain('class ReadFileArgs(TypedDict, total=False):\n    # Path to read.\n    path: Required[str]\n    offset: int\n    options: ReadFileArgsOptions')
    expect(text).toContain('class ReadFileArgsOptions(TypedDict):\n    encoding: Literal["utf8", "latin1"]')
    expect(text).toContain('class ReadFileOutput(TypedDict):\n    lines: list[ReadFileOutputLinesItem]')
    expect(text.indexOf('class ReadFileArgsOptions(')).toBeLessThan(text.indexOf('class ReadFileArgs('))
    expect(text.indexOf('class ReadFileOutputLinesItem(')).toBeLessThan(text.indexOf('class ReadFileOutput('))
  })

  it('degrades an object with an illegal field name to dict[str, Any]', () => {
    expect(text).toContain('Callable[[dict[str, Any]], Awaitable[str]]')
    const keywordField = renderPythonSdkBlock([tool('t', obj({ class: { type: 'string' } }))])
    expect(keywordField).toContain('async def t(self, args: dict[str, Any] = ...) -> str:')
    const mangled = renderPythonSdkBlock([tool('t', obj({ __secret: { type: 'string' } }))])
    expect(mangled).toContain('args: dict[str, Any]')
  })

  it('declares the tools object: methods for identifiers, subscript overloads for exotic names', () => {
    expect(text).toContain('class ToolCallError(Exception):')
    expect(text).toContain('    tool_name: str')
    expect(text).toContain('    async def read_file(self, args: ReadFileArgs) -> ReadFileOutput:\n        """Read a file.\n        With \\"quotes\\" and a \\\\ backslash.\n        """\n        ...')
    expect(text).toContain('    async def list_all(self, args: ListAllArgs = ...) -> str:')
    expect(text).toContain('    @overload\n    def __getitem__(self, name: Literal["class"]) -> Callable[[ClassArgs], Awaitable[str]]:')
    expect(text).toContain('    def __getitem__(self, name: Literal["my-tool"])')
    expect(text.trimEnd().endsWith('tools: Tools')).toBe(true)
  })

  it('gives colliding names deterministic suffixes', () => {
    const block = renderPythonSdkBlock([tool('read-file', obj({ a: { type: 'string' } })), tool('read_file', obj({ b: { type: 'string' } }))])
    expect(block).toContain('class ReadFileArgs(TypedDict, total=False):\n    a: str')
    expect(block).toContain('class ReadFileArgs2(TypedDict, total=False):\n    b: str')
    expect(block).toContain('Literal["read-file"]) -> Callable[[ReadFileArgs], ')
    expect(block).toContain('async def read_file(self, args: ReadFileArgs2 = ...)')
  })

  it('is byte-identical and lexicographic for an unchanged set', () => {
    expect(renderPythonSdkBlock([...tools].reverse())).toBe(text)
    expect(text.indexOf('def read_file')).toBeGreaterThan(text.indexOf('def list_all'))
  })

  it('keeps deep schemas linear (names restart when they grow long)', () => {
    let node: unknown = { type: 'string' }
    for (let i = 0; i < 20_000; i++) node = obj({ inner: node }, ['inner'])
    const block = renderPythonSdkBlock([tool('deep', node)])
    expect(block.length).toBeLessThan(20_000 * 120)
    expect(block).toContain('DeepArgsNested2')
  })

  const python = spawnSync('python3', ['--version'], { encoding: 'utf8' })
  const pythonOk = python.status === 0 && /Python 3\.(1[1-9])/.test(python.stdout)
  it.skipIf(!pythonOk)('is valid Python that defines every class (real python3)', () => {
    const block = renderPythonSdkBlock([
      ...tools,
      tool('deep', obj({ a: obj({ b: { oneOf: [{ type: 'string' }, obj({ c: { enum: [1, 2.5] } }, ['c'])] } }) })),
      tool('empty', { enum: [] }, { type: 'array', items: { type: 'array' } }),
    ])
    const script = `${block}\nimport typing\nassert typing.get_type_hints(ReadFileArgs)['path'] is str\nprint(sorted(ReadFileArgs.__required_keys__))\n`
    const run = spawnSync('python3', ['-c', script], { encoding: 'utf8' })
    expect(run.stderr).toBe('')
    expect(run.stdout.trim()).toBe("['path']")
  })
})

/*
 * The Python renderer's naming and bounds, exactly: the node budget, cycles, class names
 * made from tool and property names (a leading digit, no letters at all, collisions
 * numbered 2, 3, …), comments for descriptions and deprecation, and the one-tool
 * declaration `catalog.describe` hands a Python program.
 */
const toolInput = (input: { name: string; description?: string; parameters: unknown; output: unknown }) =>
  ({ description: '', ...input }) as SdkToolInput

describe('jsonSchemaToPy: bounds', () => {
  const nested = { type: 'array', items: { type: 'array', items: { type: 'string' } } }

  it('renders at most maxNodes nodes; the rest is Any', () => {
    expect(jsonSchemaToPy(nested, { maxNodes: 1 })).toBe('list[Any]')
    expect(jsonSchemaToPy(nested, { maxNodes: 2 })).toBe('list[list[Any]]')
    expect(jsonSchemaToPy(nested, { maxNodes: 3 })).toBe('list[list[str]]')
  })

  it('falls back to the default budget for a maxNodes that is not a number of at least 1', () => {
    for (const maxNodes of [0, -1, Number.NaN, '1', undefined]) expect(jsonSchemaToPy(nested, { maxNodes: maxNodes as number })).toBe('list[list[str]]')
  })

  it('renders a cycle as Any where it closes', () => {
    const cyclic: { type: string; items?: unknown } = { type: 'array' }
    cyclic.items = cyclic
    expect(jsonSchemaToPy(cyclic)).toBe('list[Any]')
  })
})

describe('renderPythonToolDeclaration', () => {
  const address = { type: 'object', properties: { street: { type: 'string' } }, required: ['street'], additionalProperties: false }

  it('names classes after the tool and the path (a leading digit gets a T), comments descriptions and deprecation', () => {
    const text = renderPythonToolDeclaration(
      toolInput({
        name: '9-lives.tool',
        description: 'Line one.\n\nLine three.',
        parameters: {
          type: 'object',
          properties: {
            home: address,
            work: { type: 'object', properties: { home: address }, additionalProperties: false },
            old: { type: 'string', description: 'Old field.\n\nGone soon.', deprecated: true },
            req: { type: 'integer' },
          },
          required: ['req'],
          additionalProperties: false,
        },
        output: { type: 'object', properties: { home: address, list: { type: 'array', items: address } }, additionalProperties: false },
      }),
    )
    expect(text).toBe(`class T9LivesToolArgsHome(TypedDict):
    street: str


class T9LivesToolArgsWorkHome(TypedDict):
    street: str


class T9LivesToolArgsWork(TypedDict, total=False):
    home: T9LivesToolArgsWorkHome


class T9LivesToolArgs(TypedDict, total=False):
    home: T9LivesToolArgsHome
    work: T9LivesToolArgsWork
    # Old field.
    #
    # Gone soon.
    # Deprecated.
    old: str
    req: Required[int]


class T9LivesToolOutputHome(TypedDict):
    street: str


class T9LivesToolOutputListItem(TypedDict):
    street: str


class T9LivesToolOutput(TypedDict, total=False):
    home: T9LivesToolOutputHome
    list: list[T9LivesToolOutputListItem]


class Tools:
    def __getitem__(self, name: Literal["9-lives.tool"]) -> Callable[[T9LivesToolArgs], Awaitable[T9LivesToolOutput]]:
        """Line one.

        Line three.
        """
        ...`)
  })

  it('numbers colliding class names 2, 3, … in order', () => {
    const leaf = (key: string) => ({ type: 'object', properties: { [key]: { type: 'string' } }, additionalProperties: false })
    const text = renderPythonToolDeclaration(
      toolInput({
        name: 'clash',
        parameters: { type: 'object', properties: { a_b: leaf('x'), aB: leaf('y'), a__b: leaf('z') }, required: ['a_b', 'aB', 'a__b'], additionalProperties: false },
        output: { type: 'null' },
      }),
    )
    expect(text).toBe(`class ClashArgsAB(TypedDict, total=False):
    x: str


class ClashArgsAB2(TypedDict, total=False):
    y: str


class ClashArgsAB3(TypedDict, total=False):
    z: str


class ClashArgs(TypedDict):
    a_b: ClashArgsAB
    aB: ClashArgsAB2
    a__b: ClashArgsAB3


class Tools:
    async def clash(self, args: ClashArgs) -> None:
        ...`)
  })

  it('calls a name with no letters or digits Tool', () => {
    expect(renderPythonToolDeclaration(toolInput({ name: '___', parameters: { type: 'object', properties: {}, additionalProperties: false }, output: { type: 'null' } }))).toBe(`class ToolArgs(TypedDict):
    pass


class Tools:
    def __getitem__(self, name: Literal["___"]) -> Callable[[ToolArgs], Awaitable[None]]:
        ...`)
  })

  it('is empty for an entry that is not a tool', () => {
    expect(renderPythonToolDeclaration({ name: 3 } as never)).toBe('')
  })
})
