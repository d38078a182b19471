/**
 * The Python flavour of the Code Mode SDK: `jsonSchemaToPy` and the SDK block for code runtimes
 * reporting `language: 'python'` (`TypedDict`s per tool, `ToolCallError`, a `tools` object).
 * @module
 */
import type { JsonPrimitive } from '../json/json-value.js'
import { classifySchemaNode, hasOnlyOptionalProperties } from '../schema/subset.js'
import { commentLines, normalizeSdkTools, type SdkToolInput } from './sdk-common.js'
import { PYTHON_SDK_INSTRUCTIONS } from './sdk-instructions.js'

/** Options for {@link jsonSchemaToPy}. */
export interface JsonSchemaToPyOptions {
  /** Maximum number of schema nodes visited; nodes beyond it render as `Any`. Default 1,000,000. */
  readonly maxNodes?: number
}

const DEFAULT_MAX_NODES = 1_000_000
const PY_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/
const PY_KEYWORDS: ReadonlySet<string> = new Set([
  'False',
  'None',
  'True',
  'and',
  'as',
  'assert',
  'async',
  'await',
  'break',
  'class',
  'continue',
  'def',
  'del',
  'elif',
  'else',
  'except',
  'finally',
  'for',
  'from',
  'global',
  'if',
  'import',
  'in',
  'is',
  'lambda',
  'nonlocal',
  'not',
  'or',
  'pass',
  'raise',
  'return',
  'try',
  'while',
  'with',
  'yield',
])
/** Names the SDK block itself declares or imports. */
const RESERVED_NAMES = [
  'Any',
  'Awaitable',
  'Callable',
  'Literal',
  'Never',
  'NotRequired',
  'Required',
  'ToolCallError',
  'Tools',
  'TypedDict',
  'overload',
  'tools',
]
const MAX_CLASS_NAME = 64

/**
 * Whether `name` can be a TypedDict attribute (and a method name): an ASCII identifier,
 * not a keyword, and not starting with `__` (class-private names are mangled).
 */
function isPyAttributeName(name: string): boolean {
  return PY_IDENTIFIER.test(name) && !PY_KEYWORDS.has(name) && !name.startsWith('__')
}

function pascalCase(name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter((w) => w !== '')
  const joined = words.map((w) => (w[0] as string).toUpperCase() + w.slice(1)).join('')
  if (joined === '') return 'Tool'
  return /^[0-9]/.test(joined) ? `T${joined}` : joined
}

/** A Python string literal (JSON escapes are valid Python escapes). */
function pyString(text: string): string {
  return JSON.stringify(text)
}

interface ClassNamer {
  allocate(hint: string): string
}

/** Class naming shared by one SDK render: unique names, deterministic suffixes. */
class PyNamer implements ClassNamer {
  private readonly used = new Set<string>(RESERVED_NAMES)
  private readonly next = new Map<string, number>()

  allocate(hint: string): string {
    if (!this.used.has(hint)) {
      this.used.add(hint)
      return hint
    }
    let n = this.next.get(hint) ?? 2
    while (this.used.has(`${hint}${n}`)) n++
    this.next.set(hint, n + 1)
    const name = `${hint}${n}`
    this.used.add(name)
    return name
  }
}

/** The naming context the SDK render supplies: where class declarations go and how they are named. */
interface PyContext {
  readonly namer: ClassNamer
  readonly classes: string[]
  readonly imports: Set<string>
  readonly root: string
}

type PyTask =
  | { readonly t: 'node'; readonly node: unknown; readonly hint: string }
  | { readonly t: 'text'; readonly text: string }
  | { readonly t: 'exit'; readonly owner: object }
  /** Closes the innermost class buffer and appends the finished declaration. */
  | { readonly t: 'class-end'; readonly owner: object }

function childHint(parent: string, suffix: string, root: string): string {
  const candidate = `${parent}${suffix}`
  return candidate.length <= MAX_CLASS_NAME ? candidate : `${root}Nested`
}

function pyLiterals(values: readonly JsonPrimitive[], imports: Set<string>): string {
  const literals: string[] = []
  let hasFloat = false
  for (const value of values) {
    if (value === null) literals.push('None')
    else if (typeof value === 'boolean') literals.push(value ? 'True' : 'False')
    else if (typeof value === 'string') literals.push(pyString(value))
    else if (Number.isInteger(value)) literals.push(BigInt(value).toString())
    // typing.Literal admits no floats: a fractional enum member widens to `float`.
    else hasFloat = true
  }
  const parts: string[] = []
  if (literals.length > 0) {
    imports.add('Literal')
    parts.push(`Literal[${literals.join(', ')}]`)
  }
  if (hasFloat) parts.push('float')
  return parts.join(' | ')
}

/**
 * Renders a JSON Schema node as a Python type expression. Total and stack-safe: it never throws,
 * whatever `schema` is.
 * @example
 * ```ts
 * jsonSchemaToPy({ type: 'array', items: { enum: ['a', 'b'] } }) // 'list[Literal["a", "b"]]'
 * ```
 */
export function jsonSchemaToPy(schema: unknown, options?: JsonSchemaToPyOptions): string {
  try {
    return renderPy(schema, options?.maxNodes, undefined, '')
  } catch {
    // Only reachable on resource exhaustion (a string too long to build); rendering stays total.
    return 'Any'
  }
}

function renderPy(schema: unknown, rawMax: unknown, context: PyContext | undefined, rootHint: string): string {
  const maxNodes = typeof rawMax === 'number' && rawMax >= 1 ? rawMax : DEFAULT_MAX_NODES
  let visited = 0
  const active = new Set<object>()
  const imports = context?.imports ?? new Set<string>()
  const root = context?.root ?? ''
  // One fragment buffer per open class declaration (the first is the expression being rendered).
  const buffers: string[][] = [[]]
  const emit = (text: string): void => {
    ;(buffers[buffers.length - 1] as string[]).push(text)
  }
  const tasks: PyTask[] = [{ t: 'node', node: schema, hint: rootHint }]
  const schedule = (sequence: PyTask[]): void => {
    for (let i = sequence.length - 1; i >= 0; i--) tasks.push(sequence[i] as PyTask)
  }

  while (tasks.length > 0) {
    const task = tasks.pop() as PyTask
    if (task.t === 'text') {
      emit(task.text)
      continue
    }
    if (task.t === 'exit') {
      active.delete(task.owner)
      continue
    }
    if (task.t === 'class-end') {
      active.delete(task.owner)
      const body = (buffers.pop() as string[]).join('')
      // Only queued with a context.
      ;(context as PyContext).classes.push(body)
      continue
    }
    const { node, hint } = task
    visited++
    if (visited > maxNodes || (typeof node === 'object' && node !== null && active.has(node))) {
      imports.add('Any')
      emit('Any')
      continue
    }
    const shape = classifySchemaNode(node)
    switch (shape.kind) {
      case 'unsupported':
      case 'any':
        imports.add('Any')
        emit('Any')
        break
      case 'never':
        imports.add('Never')
        emit('Never')
        break
      case 'primitive':
        emit({ string: 'str', number: 'float', integer: 'int', boolean: 'bool', null: 'None' }[shape.type])
        break
      case 'literals':
        emit(pyLiterals(shape.values, imports))
        break
      case 'array': {
        if (!shape.hasItems) {
          imports.add('Any')
          emit('list[Any]')
          break
        }
        const owner = node as object
        active.add(owner)
        emit('list[')
        schedule([{ t: 'node', node: shape.items, hint: childHint(hint, 'Item', root) }, { t: 'text', text: ']' }, { t: 'exit', owner }])
        break
      }
      case 'oneOf': {
        const owner = node as object
        active.add(owner)
        const sequence: PyTask[] = []
        shape.branches.forEach((branch, i) => {
          if (i > 0) sequence.push({ t: 'text', text: ' | ' })
          sequence.push({ t: 'node', node: branch, hint: childHint(hint, `Variant${i + 1}`, root) })
        })
        sequence.push({ t: 'exit', owner })
        schedule(sequence)
        break
      }
      case 'object': {
        const { properties, open } = shape
        const typed = properties.length > 0 ? properties.every((p) => isPyAttributeName(p.name)) : !open
        if (context === undefined || !typed) {
          imports.add('Any')
          emit('dict[str, Any]')
          break
        }
        const owner = node as object
        active.add(owner)
        const name = context.namer.allocate(hint)
        emit(name)
        imports.add('TypedDict')
        const allRequired = properties.every((p) => p.required)
        buffers.push([])
        emit(allRequired ? `class ${name}(TypedDict):` : `class ${name}(TypedDict, total=False):`)
        // TypedDict cannot say "and any other keys"; the comment keeps an open object honest.
        if (properties.length > 0 ? shape.explicitlyOpen : open) emit('\n    # May also carry other keys.')
        if (properties.length === 0) emit('\n    pass')
        const sequence: PyTask[] = []
        for (const p of properties) {
          const comment = pyComment(p.description, p.deprecated, '    ')
          const head = comment.length > 0 ? `\n${comment.join('\n')}` : ''
          const wrap = p.required && !allRequired
          if (wrap) imports.add('Required')
          sequence.push({ t: 'text', text: `${head}\n    ${p.name}: ${wrap ? 'Required[' : ''}` })
          sequence.push({ t: 'node', node: p.schema, hint: childHint(hint, pascalCase(p.name), root) })
          if (wrap) sequence.push({ t: 'text', text: ']' })
        }
        sequence.push({ t: 'class-end', owner })
        schedule(sequence)
        break
      }
    }
  }
  return (buffers[0] as string[]).join('')
}

function pyComment(description: string | undefined, deprecated: boolean, indent: string): string[] {
  const lines = description === undefined ? [] : commentLines(description)
  if (deprecated) lines.push('Deprecated.')
  return lines.map((l) => (l === '' ? `${indent}#` : `${indent}# ${l}`))
}

/** A docstring body: backslashes and quotes escaped so no text can close it early. */
function pyDocstring(description: string, indent: string): string[] {
  const lines = commentLines(description.replaceAll('\\', '\\\\').replaceAll('"', '\\"'))
  if (lines.length === 0) return []
  if (lines.length === 1) return [`${indent}"""${lines[0]}"""`]
  return [`${indent}"""${lines[0]}`, ...lines.slice(1).map((l) => (l === '' ? '' : `${indent}${l}`)), `${indent}"""`]
}

/**
 * Renders the Python SDK block (declarations only) for `tools`: sorted by code point,
 * deterministic, total.
 */
export function renderPythonSdkBlock(tools: readonly SdkToolInput[]): string {
  const sorted = normalizeSdkTools(tools)
  const namer = new PyNamer()
  const classes: string[] = []
  const imports = new Set<string>()
  const methods: string[][] = []
  const exotic: string[][] = []

  // Root names are reserved up front so nested names of earlier tools can never take them.
  const roots = sorted.map((tool) => {
    const base = pascalCase(tool.name)
    return { args: namer.allocate(`${base}Args`), output: namer.allocate(`${base}Output`) }
  })
  sorted.forEach((tool, index) => {
    const { args: argsRoot, output: outputRoot } = roots[index] as { args: string; output: string }
    const argsType = renderToolSchema(tool.parameters, argsRoot, namer, classes, imports)
    const outputType = renderToolSchema(tool.output, outputRoot, namer, classes, imports)
    const member = toolMember(tool, argsType, outputType, imports)
    if (isPyAttributeName(tool.name)) methods.push(member)
    else exotic.push(member)
  })
  if (exotic.length > 1) {
    imports.add('overload')
    for (const entry of exotic) entry.unshift('    @overload')
  }

  const out: string[] = []
  if (imports.size > 0) out.push(`from typing import ${[...imports].sort().join(', ')}`, '', '')
  for (const declaration of classes) out.push(declaration, '', '')
  out.push('class ToolCallError(Exception):')
  out.push('    """A failed tool call: `tool_name` names the tool, `code` says why, `str(error)` is the message."""')
  out.push('')
  out.push('    tool_name: str')
  out.push('    code: str', '', '')
  out.push('class Tools:')
  const members = [...methods]
  if (exotic.length > 0) {
    members.push(['    # Tools whose names are not Python identifiers: call them as tools["name"](args).'])
    members.push(...exotic)
  }
  if (members.length === 0) out.push('    pass')
  members.forEach((member, i) => {
    if (i > 0) out.push('')
    out.push(...member)
  })
  out.push('', '', 'tools: Tools')
  return out.join('\n')
}

/** A tool's member of the `Tools` class: a method, or a `__getitem__` overload for a name that is not an identifier. */
function toolMember(tool: SdkToolInput, argsType: string, outputType: string, imports: Set<string>): string[] {
  const doc = pyDocstring(tool.description, '        ')
  if (isPyAttributeName(tool.name)) {
    const optional = hasOnlyOptionalProperties(tool.parameters)
    return [`    async def ${tool.name}(self, args: ${argsType}${optional ? ' = ...' : ''}) -> ${outputType}:`, ...doc, '        ...']
  }
  imports.add('Literal')
  imports.add('Callable')
  imports.add('Awaitable')
  return [`    def __getitem__(self, name: Literal[${pyString(tool.name)}]) -> Callable[[${argsType}], Awaitable[${outputType}]]:`, ...doc, '        ...']
}

function renderToolSchema(
  schema: unknown,
  root: string,
  namer: PyNamer,
  classes: string[],
  imports: Set<string>,
): string {
  // The root name was allocated by the caller.
  let rootPending = true
  const scoped: ClassNamer = {
    allocate(hint: string): string {
      if (rootPending && hint === root) {
        rootPending = false
        return root
      }
      return namer.allocate(hint)
    },
  }
  try {
    return renderPy(schema, undefined, { namer: scoped, classes, imports, root }, root)
  } catch {
    // As in jsonSchemaToPy: resource exhaustion only; the tool's type degrades to Any.
    imports.add('Any')
    return 'Any'
  }
}

/** Renders the whole Python SDK text: usage instructions, then the fenced SDK block. */
export function renderPythonSdk(tools: readonly SdkToolInput[]): string {
  return `${PYTHON_SDK_INSTRUCTIONS}\n\n\`\`\`python\n${renderPythonSdkBlock(tools)}\n\`\`\`\n`
}

/**
 * The Python declaration of one tool, as `catalog.search` / `catalog.describe` hand it to a
 * program: the TypedDicts of its arguments and output, then its member of the `Tools` class — what
 * the full SDK renders for that tool, without the shared preamble (`typing` imports,
 * `ToolCallError`).
 */
export function renderPythonToolDeclaration(tool: SdkToolInput): string {
  const [normalized] = normalizeSdkTools([tool])
  if (normalized === undefined) return ''
  const namer = new PyNamer()
  const base = pascalCase(normalized.name)
  const argsRoot = namer.allocate(`${base}Args`)
  const outputRoot = namer.allocate(`${base}Output`)
  const classes: string[] = []
  const imports = new Set<string>()
  const argsType = renderToolSchema(normalized.parameters, argsRoot, namer, classes, imports)
  const outputType = renderToolSchema(normalized.output, outputRoot, namer, classes, imports)
  const member = toolMember(normalized, argsType, outputType, imports)
  return [...classes.flatMap((declaration) => [declaration, '', '']), 'class Tools:', ...member].join('\n')
}
