/**
 * Example programs for the editor, and sample arguments for the native-call form.
 *
 * @module
 */
import type { RunBudgets } from './backend.js'

/** One example program. */
export interface Example {
  readonly title: string
  readonly description: string
  readonly code: string
  /** Budgets the example is meant to show off (e.g. a small compute budget). */
  readonly budgets?: RunBudgets
}

/** The editor's examples, first one loaded at start. */
export const EXAMPLES: readonly Example[] = [
  {
    title: 'Parallel reads, then an exclusive write',
    description: 'Safe calls overlap; the write runs alone (see the timeline).',
    code: `// Reads are concurrency-safe: they overlap on the timeline.
const files = ['README.md', 'src/notes.ts', 'src/search.ts', 'package.json']
const reads = await Promise.all(files.map((path) => tools.read_file({ path })))
console.log('read', reads.length, 'files:', reads.map((r) => \`\${r.path} (\${r.totalLines} lines)\`).join(', '))

// A write is exclusive: it waits for the reads, runs alone, and holds back what follows.
await tools.write_file({ path: 'notes/summary.md', content: '# Files\\n' + files.map((f) => '- ' + f).join('\\n') + '\\n' })

// These start only after the write settles, then overlap again.
const [todo, exported] = await Promise.all([
  tools.grep({ pattern: 'TODO' }),
  tools.grep({ pattern: 'export function', glob: 'src/**/*.ts' }),
])
return { files: reads.length, todos: todo.files.length, exportedIn: exported.files.map((f) => f.path) }
`,
  },
  {
    title: 'Shop: top gold customers',
    description: 'Many concurrency-safe calls fan out in parallel; one line comes back.',
    code: `// Which gold customers spent most on shipped orders? One program, one line of output.
const { customers } = await tools.list_customers({ tier: 'gold', limit: 100 })
const spend = await Promise.all(
  customers.map(async (c) => {
    const { orders } = await tools.list_orders({ customerId: c.id, status: 'shipped', limit: 100 })
    return { name: c.name, cents: orders.reduce((sum, o) => sum + o.totalCents, 0) }
  }),
)
const top = spend.sort((a, b) => b.cents - a.cents).slice(0, 3)
console.log(top.map((t) => \`\${t.name}: $\${(t.cents / 100).toFixed(2)}\`).join(' · '))
return top
`,
  },
  {
    title: 'Search, read and edit',
    description: 'glob → grep → read → edit, with each card rendered by the tool itself.',
    code: `const { paths } = await tools.glob({ pattern: 'src/**/*.ts' })
console.log('TypeScript files:', paths.length)
const hits = await tools.grep({ pattern: 'randomId', glob: 'src/**/*.ts' })
for (const file of hits.files) console.log(file.path, '→', file.matches.length, 'match(es)')
const ids = await tools.read_file({ path: 'src/util/ids.ts' })
await tools.edit_file({ path: 'README.md', oldText: 'TODO: document the tag API.', newText: 'Tags: see src/types.ts.' })
return { files: paths.length, idsLines: ids.totalLines }
`,
  },
  {
    title: 'Hello (no tools)',
    description: 'TypeScript in, value out.',
    code: `interface Point { x: number; y: number }
const points: Point[] = [{ x: 1, y: 2 }, { x: 3, y: 4 }]
console.log('points:', points)
return points.reduce((sum, p) => sum + p.x * p.y, 0)
`,
  },
  {
    title: 'Hot loop (press Abort)',
    description: 'Never yields: Abort ends it with kind abort.',
    code: `console.log('spinning… press Abort')
while (true) {}
`,
    budgets: { computeMs: 60_000, maxWallMs: 120_000 },
  },
  {
    title: 'Compute budget (timeout)',
    description: 'Burns CPU past a 500 ms compute budget: kind timeout.',
    code: `let n = 0
for (;;) n++
`,
    budgets: { computeMs: 500, maxWallMs: 10_000 },
  },
  {
    title: 'Slow tool, idle program',
    description: 'Awaiting a slow tool is not compute: it survives a small compute budget.',
    code: `// The program idles while it awaits; idle time is not compute.
const started = Date.now()
await new Promise((resolve) => setTimeout(resolve, 1500))
return { idleMs: Date.now() - started }
`,
    budgets: { computeMs: 200, maxWallMs: 10_000 },
  },
  {
    title: 'Throw',
    description: 'An exception with the line it came from.',
    code: `const value: number = 41
function check(n: number) {
  if (n !== 42) throw new RangeError('expected 42, got ' + n)
}
check(value)
`,
  },
]

/**
 * Sample arguments for a tool from its parameter schema: every required property with
 * its example, default, first enum value or a type-shaped placeholder. Iterative and
 * shallow on purpose (a form seed, not a generator).
 */
export function exampleArguments(name: string, parameters: unknown): Record<string, unknown> {
  const known = SAMPLE_ARGUMENTS[name]
  if (known !== undefined) return known
  const schema = (parameters ?? {}) as { properties?: Record<string, Record<string, unknown>>; required?: string[] }
  const out: Record<string, unknown> = {}
  for (const key of schema.required ?? []) {
    const property = schema.properties?.[key] ?? {}
    out[key] = sampleFor(property)
  }
  return out
}

function sampleFor(property: Record<string, unknown>): unknown {
  if (Array.isArray(property.examples) && property.examples.length > 0) return property.examples[0]
  if (property.default !== undefined) return property.default
  if (Array.isArray(property.enum) && property.enum.length > 0) return property.enum[0]
  if (property.const !== undefined) return property.const
  switch (Array.isArray(property.type) ? property.type[0] : property.type) {
    case 'string':
      return ''
    case 'integer':
    case 'number':
      return typeof property.minimum === 'number' ? property.minimum : 1
    case 'boolean':
      return false
    case 'array':
      return []
    case 'object':
      return {}
    default:
      return null
  }
}

/** Hand-picked seeds for the demo tools, so a first Call shows something real. */
const SAMPLE_ARGUMENTS: Readonly<Record<string, Record<string, unknown>>> = {
  read_file: { path: 'src/notes.ts', offset: 1, limit: 20 },
  write_file: { path: 'notes/hello.md', content: '# Hello\n' },
  edit_file: { path: 'README.md', oldText: 'TODO: document the tag API.', newText: 'Tags: see src/types.ts.' },
  grep: { pattern: 'export', glob: 'src/**/*.ts' },
  glob: { pattern: '**/*.{md,json}' },
  list_files: { dir: 'src' },
}

/** The editor's Python examples (MicroPython: the same tools, `asyncio.gather` for overlap), first one loaded on switching. */
export const PYTHON_EXAMPLES: readonly Example[] = [
  {
    title: 'Parallel reads, then an exclusive write',
    description: 'asyncio.gather overlaps the safe calls; the write runs alone (see the timeline).',
    code: `# Reads are concurrency-safe: asyncio.gather overlaps them on the timeline.
files = ['README.md', 'src/notes.ts', 'src/search.ts', 'package.json']
reads = await asyncio.gather(*[tools.read_file({'path': path}) for path in files])
print('read', len(reads), 'files:', ', '.join('%s (%d lines)' % (r['path'], r['totalLines']) for r in reads))

# A write is exclusive: it waits for the reads, runs alone, and holds back what follows.
await tools.write_file({'path': 'notes/summary.md', 'content': '# Files\\n' + '\\n'.join('- ' + f for f in files) + '\\n'})

# These start only after the write settles, then overlap again.
todo, exported = await asyncio.gather(
    tools.grep({'pattern': 'TODO'}),
    tools.grep({'pattern': 'export function', 'glob': 'src/**/*.ts'}),
)
return {'files': len(reads), 'todos': len(todo['files']), 'exportedIn': [f['path'] for f in exported['files']]}
`,
  },
  {
    title: 'Shop: top gold customers',
    description: 'Many concurrency-safe calls fan out with asyncio.gather; one line comes back.',
    code: `# Which gold customers spent most on shipped orders? One program, one line of output.
customers = (await tools.list_customers({'tier': 'gold', 'limit': 100}))['customers']

async def spend_of(customer):
    orders = (await tools.list_orders({'customerId': customer['id'], 'status': 'shipped', 'limit': 100}))['orders']
    return {'name': customer['name'], 'cents': sum(o['totalCents'] for o in orders)}

spend = await asyncio.gather(*[spend_of(c) for c in customers])
top = sorted(spend, key=lambda t: t['cents'], reverse=True)[:3]
print(' · '.join('%s: $%.2f' % (t['name'], t['cents'] / 100) for t in top))
return top
`,
  },
  {
    title: 'Hello (no tools)',
    description: 'Python in, value out.',
    code: `points = [{'x': 1, 'y': 2}, {'x': 3, 'y': 4}]
print('points:', points)
return sum(p['x'] * p['y'] for p in points)
`,
  },
  {
    title: 'A failed call (ToolCallError)',
    description: 'A tool that fails raises ToolCallError with tool_name and code; the program catches it.',
    code: `try:
    await tools.read_file({'path': 'no/such/file.md'})
except ToolCallError as error:
    print('caught:', error.tool_name, error.code)
    return str(error)
`,
  },
  {
    title: 'Hot loop (press Abort)',
    description: 'Never yields: Abort ends it with kind abort (the worker is terminated).',
    code: `print('spinning… press Abort')
while True:
    pass
`,
    budgets: { computeMs: 60_000, maxWallMs: 120_000 },
  },
  {
    title: 'Compute budget (timeout)',
    description: 'Burns CPU past a 500 ms compute budget: kind timeout.',
    code: `n = 0
while True:
    n += 1
`,
    budgets: { computeMs: 500, maxWallMs: 10_000 },
  },
  {
    title: 'Slow tool, idle program',
    description: 'Awaiting is not compute: asyncio.sleep survives a small compute budget.',
    code: `# The program idles while it awaits; idle time is not compute.
await asyncio.sleep(1.5)
return 'slept 1.5 s on a 200 ms compute budget'
`,
    budgets: { computeMs: 200, maxWallMs: 10_000 },
  },
]
