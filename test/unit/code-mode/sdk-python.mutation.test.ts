/**
 * The Python renderer's naming and bounds, exactly: the node budget, cycles, class names
 * made from tool and property names (a leading digit, no letters at all, collisions
 * numbered 2, 3, …), comments for descriptions and deprecation, and the one-tool
 * declaration `catalog.describe` hands a Python program.
 */
import { describe, expect, it } from 'vitest'
import { jsonSchemaToPy, renderPythonToolDeclaration } from '../../../src/code-mode/sdk-python.js'
import type { SdkToolInput } from '../../../src/code-mode/sdk-common.js'

const tool = (input: { name: string; description?: string; parameters: unknown; output: unknown }) =>
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
      tool({
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
      tool({
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
    expect(renderPythonToolDeclaration(tool({ name: '___', parameters: { type: 'object', properties: {}, additionalProperties: false }, output: { type: 'null' } }))).toBe(`class ToolArgs(TypedDict):
    pass


class Tools:
    def __getitem__(self, name: Literal["___"]) -> Callable[[ToolArgs], Awaitable[None]]:
        ...`)
  })

  it('is empty for an entry that is not a tool', () => {
    expect(renderPythonToolDeclaration({ name: 3 } as never)).toBe('')
  })
})
