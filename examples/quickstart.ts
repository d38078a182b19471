/**
 * A runnable tour of toolyard on Node (`npm run example`): define typed tools, call one
 * natively, then run a Code Mode program that calls them in parallel, and print what a
 * model would see.
 *
 * @module
 */
import { createMemorySessionLog, createToolRuntime, defineTool } from '../src/index.js'
import { createSandboxRuntime } from '../platforms/node/index.js'

const sessionLog = createMemorySessionLog()
const codeRuntime = createSandboxRuntime() // QuickJS in pooled worker threads: the program's only authority is its tools
const runtime = createToolRuntime({ mode: 'both', codeRuntime, sessionLog })

runtime.register(
  defineTool({
    name: 'add',
    description: 'Add two numbers.',
    parameters: {
      a: { type: 'number', required: true },
      b: { type: 'number', required: true },
    },
    output: {
      schema: { type: 'number' },
      render: (_args, sum) => [{ type: 'text', text: String(sum) }],
    },
    isConcurrencySafe: () => true,
    execute: (args) => args.a + args.b, // args: { a: number; b: number }
  }),
)

const signal = AbortSignal.timeout(30_000)

// 1. A native call, and a call with bad arguments.
const direct = await runtime.execute({ callId: 'c1', name: 'add', arguments: { a: 2, b: 3 }, signal })
console.log('native add →', direct.content)
const invalid = await runtime.execute({ callId: 'c2', name: 'add', arguments: { a: 'two' }, signal })
console.log('invalid add →', invalid.isError ? invalid.error : invalid.value)

// 2. A Code Mode program: three parallel sub-calls, one curated result.
const program = await runtime.execute({
  callId: 'c3',
  name: 'run_code',
  signal,
  arguments: {
    description: 'sum a few pairs',
    code: [
      'const sums: number[] = await Promise.all([1, 2, 3].map((n) => tools.add({ a: n, b: n })))',
      "console.log('computed', sums.length, 'sums')",
      'return sums',
    ].join('\n'),
  },
})
console.log('run_code →')
console.log(program.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n'))
console.log('sub-calls logged:', sessionLog.events.filter((e) => e.type === 'tool/code-dispatch').map((e) => e.subCallId))

// 3. What the model is offered under mode `both`.
const assembly = runtime.assemble()
console.log('wire tools:', assembly.tools.map((t) => t.name))
console.log('prompt sections:', assembly.sections.map((s) => `${s.id} (${s.text.length} chars)`))

await runtime.dispose()
await codeRuntime.dispose()
