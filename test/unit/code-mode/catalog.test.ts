/**
 * The program's `catalog` (src/code-mode/catalog-bindings.ts) against the real registry
 * and the default Node sandbox (`createSandboxRuntime`: QuickJS in pooled threads):
 * search and describe from inside a program, their argument checks and failures, scope
 * masking, the run's snapshot of the tool set, and what catalog calls do not do (enter
 * the pipeline, the session log).
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { runCodeBridge } from '../../../src/code-mode/bridge.js'
import { CATALOG_BINDINGS_GLOBAL, MAX_CATALOG_CALLS_PER_RUN, MAX_CATALOG_QUERY_CHARS, catalogNamespace } from '../../../src/code-mode/catalog-bindings.js'
import { ToolCallError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolCatalog, ToolCatalogHit, ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import type { ToolExecutionResult, ToolRunContext } from '../../../src/types.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { largeRegistryDefinition, registerLargeRegistry } from '../../support/large-registry-tools.js'
import { createInProcessRuntime } from './support/in-process-runtime.js'
import { createTestHost } from './support/test-host.js'

const sandbox = createSandboxRuntime({ memoryMb: 32 })
const registries: ToolRuntime[] = []
afterAll(async () => {
  await Promise.all(registries.map((registry) => registry.dispose()))
  await sandbox.dispose()
})

const STORAGE = LARGE_REGISTRY.filter((tool) => tool.name.startsWith('storage_'))
const BUCKET = STORAGE.find((tool) => tool.name === 'storage_delete_bucket')!

/** A code-mode registry over the storage tools; `storage_delete_bucket` has a real body. */
function setup(options: Partial<ToolRuntimeOptions> = {}) {
  const sessionLog = createMemorySessionLog()
  const registry = createToolRuntime({ mode: 'code', codeRuntime: sandbox, sessionLog, sdkBudgetChars: 4_000, ...options })
  registries.push(registry)
  registerLargeRegistry(registry, STORAGE.filter((tool) => tool !== BUCKET))
  registry.register(largeRegistryDefinition(BUCKET, (args: { bucket_id: string }) => ({ deleted: true, bucket_id: args.bucket_id })))
  const run = (code: string, agent?: string): Promise<ToolExecutionResult> =>
    registry.execute({ callId: 'run-1', name: 'run_code', arguments: { code, description: 'test' }, signal: AbortSignal.timeout(20_000), ...(agent === undefined ? {} : { agent }) })
  return { registry, sessionLog, run }
}

function valueOf(result: ToolExecutionResult): unknown {
  if (result.isError) throw new Error(`run_code failed: ${result.error.message}`)
  return (result.value as { result?: unknown }).result
}

/** A catalog that records its calls: `tools` maps a name to its declaration; search answers `hits`. */
function recordingCatalog(tools: Record<string, string> = {}, hits: readonly ToolCatalogHit[] = [], closest: readonly string[] = []) {
  const calls: unknown[][] = []
  const catalog: ToolCatalog = {
    size: Object.keys(tools).length,
    language: 'typescript',
    search: (query, options) => {
      calls.push(['search', query, options])
      return hits
    },
    describe: (name) => {
      calls.push(['describe', name])
      return Object.hasOwn(tools, name) ? tools[name] : undefined
    },
    closest: (name, limit) => {
      calls.push(['closest', name, limit])
      return closest
    },
  }
  return { catalog, calls }
}

/** The namespace's two functions, called as a variadic runtime calls them (the argument list). */
function namespaceOver(catalog: ToolCatalog) {
  const namespace = catalogNamespace(catalog)
  const options = { signal: new AbortController().signal }
  return {
    namespace,
    search: (...args: unknown[]) => namespace.functions.search!(args, options),
    describe: (...args: unknown[]) => namespace.functions.describe!(args, options),
  }
}

/** `ToolCallError` as `[toolName, message]`, or `'resolved'`. */
async function failure(call: Promise<unknown>): Promise<unknown> {
  try {
    await call
    return 'resolved'
  } catch (error) {
    expect(error).toBeInstanceOf(ToolCallError)
    return [(error as ToolCallError).toolName, (error as ToolCallError).message]
  }
}

describe('the catalog namespace on the host', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('is the variadic, frozen `catalog` global with exactly search and describe', () => {
    const { namespace } = namespaceOver(recordingCatalog().catalog)
    expect(CATALOG_BINDINGS_GLOBAL).toBe('catalog')
    expect(namespace.global).toBe('catalog')
    expect(namespace.variadic).toBe(true)
    expect(Object.isFrozen(namespace.functions)).toBe(true)
    expect(Object.getPrototypeOf(namespace.functions)).toBe(null)
    expect(Object.keys(namespace.functions).sort()).toEqual(['describe', 'search'])
  })

  it('search passes the query and limit (default 5) and answers plain copies of name, description and declaration', async () => {
    const hit = { name: 'a', description: 'A tool.', declaration: 'a(): Promise<null>', score: 3 } as ToolCatalogHit
    const { catalog, calls } = recordingCatalog({}, [hit])
    const { search } = namespaceOver(catalog)
    const answer = (await search('find a', { limit: 1 })) as object[]
    expect(answer).toEqual([{ name: 'a', description: 'A tool.', declaration: 'a(): Promise<null>' }])
    expect(Object.keys(answer[0]!)).toEqual(['name', 'description', 'declaration'])
    expect(answer[0]).not.toBe(hit)
    await search('x')
    await search('x', undefined)
    await search('x', null)
    await search('x', {})
    await search('x', { limit: null })
    await search('x', { limit: 2 ** 53 - 1 })
    expect(calls).toEqual([
      ['search', 'find a', { limit: 1 }],
      ['search', 'x', { limit: 5 }],
      ['search', 'x', { limit: 5 }],
      ['search', 'x', { limit: 5 }],
      ['search', 'x', { limit: 5 }],
      ['search', 'x', { limit: 5 }],
      ['search', 'x', { limit: 2 ** 53 - 1 }],
    ])
  })

  it('a runtime without the variadic flag passes the first argument alone: it is the query or the name', async () => {
    const { catalog, calls } = recordingCatalog({ t: 'decl of t' })
    const namespace = catalogNamespace(catalog)
    const options = { signal: new AbortController().signal }
    await namespace.functions.search!('alone', options)
    expect(await namespace.functions.describe!('t', options)).toBe('decl of t')
    expect(calls).toEqual([
      ['search', 'alone', { limit: 5 }],
      ['describe', 't'],
    ])
  })

  it('refuses a query of 501 characters with its length; 500 pass', async () => {
    const { catalog, calls } = recordingCatalog()
    const { search } = namespaceOver(catalog)
    expect(MAX_CATALOG_QUERY_CHARS).toBe(500)
    expect(await failure(search('q'.repeat(500)))).toBe('resolved')
    expect(await failure(search('q'.repeat(501)))).toEqual([
      'catalog.search',
      'the query is 501 characters long; at most 500 are accepted: search with a few words',
    ])
    expect(calls).toHaveLength(1)
  })

  it('checks search and describe arguments with messages that say how to call them', async () => {
    const { catalog, calls } = recordingCatalog()
    const { search, describe: describeName } = namespaceOver(catalog)
    const query = 'catalog.search: query must be a string of plain words: catalog.search("refund an order")'
    const options = 'catalog.search: options must be an object: catalog.search(query, { limit })'
    const outcomes = await Promise.all(
      [
        search(),
        search(7),
        search(null),
        search('q', 5),
        search('q', 'limit'),
        search('q', [3]),
        search('q', { limit: 0 }),
        search('q', { limit: -1 }),
        search('q', { limit: 1.5 }),
        search('q', { limit: '2' }),
        search('q', { limit: 2 ** 53 }),
        search('q', { limit: Number.NaN }),
        search('q', { limit: Symbol('s') }),
        describeName(),
        describeName(7),
      ].map(failure),
    )
    expect(outcomes.map((outcome) => (outcome as string[]).join(': '))).toEqual([
      query,
      query,
      query,
      options,
      options,
      options,
      'catalog.search: limit must be a positive integer (got 0)',
      'catalog.search: limit must be a positive integer (got -1)',
      'catalog.search: limit must be a positive integer (got 1.5)',
      'catalog.search: limit must be a positive integer (got "2")',
      'catalog.search: limit must be a positive integer (got 9007199254740992)',
      'catalog.search: limit must be a positive integer (got null)',
      'catalog.search: limit must be a positive integer (got Symbol(s))',
      'catalog.describe: name must be a string: catalog.describe("tool_name")',
      'catalog.describe: name must be a string: catalog.describe("tool_name")',
    ])
    // A refused argument never reaches the catalog.
    expect(calls).toEqual([])
  })

  it('describe answers the declaration, or names the three closest, or says nothing is named like it', async () => {
    const { catalog, calls } = recordingCatalog({ storage_get: 'storage_get(args: {})' }, [], ['storage_get', 'storage_put'])
    const { describe: describeName } = namespaceOver(catalog)
    expect(await describeName('storage_get')).toBe('storage_get(args: {})')
    expect(await failure(describeName('storage_got'))).toEqual([
      'catalog.describe',
      'no tool named "storage_got" is available to this program; the closest: storage_get, storage_put',
    ])
    expect(calls).toEqual([
      ['describe', 'storage_get'],
      ['describe', 'storage_got'],
      ['closest', 'storage_got', 3],
    ])
    // A program tells a name no tool has from a misused call by the error's code.
    expect(await describeName('storage_got').catch((e: { code?: string }) => e.code)).toBe('UNKNOWN_TOOL')
    expect(await describeName(5 as never).catch((e: { code?: string }) => e.code)).toBe('INVALID_ARGS')
    const lonely = namespaceOver(recordingCatalog().catalog)
    expect(await failure(lonely.describe('zz"\n'))).toEqual([
      'catalog.describe',
      'no tool named "zz\\"\\n" is available to this program; nothing is named like it: find tools by what they do with catalog.search(query)',
    ])
  })

  it('quotes a name of 120 characters whole and cuts a longer one to its first 120 with an ellipsis', async () => {
    const { describe: describeName } = namespaceOver(recordingCatalog().catalog)
    const tail = '; nothing is named like it: find tools by what they do with catalog.search(query)'
    expect(await failure(describeName('n'.repeat(120)))).toEqual(['catalog.describe', `no tool named "${'n'.repeat(120)}" is available to this program${tail}`])
    expect(await failure(describeName('n'.repeat(120) + 'xyz'))).toEqual(['catalog.describe', `no tool named "${'n'.repeat(120)}…" is available to this program${tail}`])
  })

  it('answers one call per turn of the event loop, in call order; a failed call does not stop the next', async () => {
    const order: string[] = []
    const catalog: ToolCatalog = {
      size: 0,
      language: 'typescript',
      search: (query) => {
        order.push(`search ${query}`)
        if (query === 'boom') throw new Error('the index broke')
        return []
      },
      describe: (name) => {
        order.push(`describe ${name}`)
        return 'd'
      },
      closest: () => [],
    }
    const { search, describe: describeName } = namespaceOver(catalog)
    const calls = [search('one'), search('boom'), describeName('two'), search('three')]
    // Nothing is answered in the calling turn, nor before a timer set after the calls.
    expect(order).toEqual([])
    const ticks: string[] = []
    const tick = (label: string) => new Promise<void>((resolve) => setTimeout(() => (ticks.push(`${label}: ${order.length}`), resolve()), 0))
    await tick('first timer')
    await tick('second timer')
    const settled = await Promise.allSettled(calls)
    expect(order).toEqual(['search one', 'search boom', 'describe two', 'search three'])
    // A timer set in the calling turn fires before the first answer; one set after it, before the second.
    expect(ticks).toEqual(['first timer: 0', 'second timer: 1'])
    expect(settled.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    expect((settled[1] as PromiseRejectedResult).reason).toEqual(new Error('the index broke'))
  })

  it(`answers ${MAX_CATALOG_CALLS_PER_RUN} calls of a run, search and describe together, and refuses the next ones at once`, async () => {
    vi.useFakeTimers()
    expect(MAX_CATALOG_CALLS_PER_RUN).toBe(2000)
    const { catalog, calls } = recordingCatalog({ t: 'decl' })
    const { search, describe: describeName } = namespaceOver(catalog)
    const answered: Promise<unknown>[] = []
    // Refused arguments are not catalog calls: they do not count.
    for (let i = 0; i < 3; i++) await failure(search(i))
    for (let i = 0; i < MAX_CATALOG_CALLS_PER_RUN - 1; i++) answered.push(search(`q${i}`))
    answered.push(describeName('t'))
    const refusal = 'refused: this run has made 2000 catalog calls, the most one run may make; use what earlier searches returned'
    expect(await failure(describeName('t'))).toEqual(['catalog.describe', refusal])
    expect(await failure(search('late'))).toEqual(['catalog.search', refusal])
    await vi.runAllTimersAsync()
    const values = await Promise.all(answered)
    expect(values).toHaveLength(2000)
    expect(values.at(-1)).toBe('decl')
    expect(calls).toHaveLength(2000)
    // Another run (a new namespace) has its own allowance.
    const again = namespaceOver(catalog)
    const next = again.search('fresh')
    await vi.runAllTimersAsync()
    expect(await next).toEqual([])
  })
})

describe('catalog inside a program', () => {
  it('searches with a limit (default 5), describes, and calls a tool the prompt never declared', async () => {
    const { registry, run } = setup()
    const sdk = registry.assemble().sections.find((section) => section.id === 'tools:sdk')!.text
    expect(sdk).toContain('## Tool catalog')
    expect(sdk).not.toContain('storage_delete_bucket(args')
    const value = valueOf(
      await run(`
        const hits = await catalog.search('remove the staging bucket', { limit: 2 })
        const fallback = await catalog.search('bucket')
        const declaration = await catalog.describe(hits[0].name)
        const result = await tools[hits[0].name]({ bucket_id: 'staging' })
        return { names: hits.map((h) => h.name), keys: Object.keys(hits[0]).sort(), fallback: fallback.length, same: declaration === hits[0].declaration, declaration, result }
      `),
    ) as { names: string[]; keys: string[]; fallback: number; same: boolean; declaration: string; result: unknown }
    expect(value.names).toHaveLength(2)
    expect(value.names[0]).toBe('storage_delete_bucket')
    expect(value.keys).toEqual(['declaration', 'description', 'name'])
    expect(value.fallback).toBe(5)
    expect(value.same).toBe(true)
    expect(value.declaration).toBe(registry.catalog().describe('storage_delete_bucket'))
    expect(value.result).toEqual({ deleted: true, bucket_id: 'staging' })
  })

  it('describe of a name no tool has rejects with ToolCallError naming the closest names', async () => {
    const { run } = setup()
    const value = valueOf(
      await run(`
        const out = []
        for (const name of ['storage_remove_bucket', 'zzqx']) {
          try { await catalog.describe(name) } catch (e) { out.push([e instanceof ToolCallError, e.toolName, e.message]) }
        }
        return out
      `),
    )
    expect(value).toEqual([
      [true, 'catalog.describe', expect.stringMatching(/^no tool named "storage_remove_bucket" is available to this program; the closest: storage_delete_bucket(, \w+)*$/)],
      [true, 'catalog.describe', 'no tool named "zzqx" is available to this program; nothing is named like it: find tools by what they do with catalog.search(query)'],
    ])
  })

  it('checks its arguments: each misuse rejects with a ToolCallError that says how to call it', async () => {
    const { run } = setup()
    const value = valueOf(
      await run(`
        const attempts = [
          () => catalog.search(),
          () => catalog.search(42),
          () => catalog.search('bucket', 5),
          () => catalog.search('bucket', { limit: 0 }),
          () => catalog.search('bucket', { limit: 1.5 }),
          () => catalog.describe(),
          () => catalog.describe({ name: 'x' }),
        ]
        const out = []
        for (const attempt of attempts) {
          try { await attempt(); out.push('resolved') } catch (e) { out.push(e.toolName + ': ' + e.message) }
        }
        out.push((await catalog.search('bucket', { limit: null })).length, (await catalog.search('bucket', {})).length)
        return out
      `),
    )
    expect(value).toEqual([
      'catalog.search: query must be a string of plain words: catalog.search("refund an order")',
      'catalog.search: query must be a string of plain words: catalog.search("refund an order")',
      'catalog.search: options must be an object: catalog.search(query, { limit })',
      'catalog.search: limit must be a positive integer (got 0)',
      'catalog.search: limit must be a positive integer (got 1.5)',
      'catalog.describe: name must be a string: catalog.describe("tool_name")',
      'catalog.describe: name must be a string: catalog.describe("tool_name")',
      5,
      5,
    ])
  })

  it('binds every visible tool under `tools`, declared in the prompt or not', async () => {
    const { run } = setup()
    expect(valueOf(await run('return Object.keys(tools).length'))).toBe(STORAGE.length)
  })

  it('sees exactly what the calling agent may call: nothing else can be found, described or called', async () => {
    const { registry, run } = setup()
    registry.agent('reader').restrict({ deny: ['storage_delete_bucket'] })
    const value = valueOf(
      await run(
        `
        const found = (await catalog.search('delete a bucket', { limit: 50 })).map((h) => h.name)
        let described
        try { await catalog.describe('storage_delete_bucket') } catch (e) { described = e.message }
        return { found: found.includes('storage_delete_bucket'), described, bound: 'storage_delete_bucket' in tools, total: Object.keys(tools).length }
      `,
        'reader',
      ),
    )
    expect(value).toEqual({
      found: false,
      described: expect.stringMatching(/^no tool named "storage_delete_bucket" is available to this program/),
      bound: false,
      total: STORAGE.length - 1,
    })
  })

  it('answers from the tool set as the run started, like `tools`', async () => {
    const { registry, run } = setup()
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let entered!: () => void
    const waiting = new Promise<void>((resolve) => (entered = resolve))
    registry.register({
      name: 'zz_wait',
      description: 'Wait until the test says so.',
      parameters: { type: 'object' },
      output: { schema: { type: 'null' }, render: () => [] },
      execute: async () => {
        entered()
        await gate
        return null
      },
    })
    const running = run(`
      await tools.zz_wait()
      let late = 'found'
      try { await catalog.describe('zz_late') } catch { late = 'not found' }
      return [late, 'zz_late' in tools, (await catalog.search('late arrival')).some((h) => h.name === 'zz_late')]
    `)
    // The run is inside its program (not merely started some time ago) before the tool set changes.
    await waiting
    registry.register({
      name: 'zz_late',
      description: 'A late arrival.',
      parameters: { type: 'object' },
      output: { schema: { type: 'null' }, render: () => [] },
      execute: () => null,
    })
    release()
    expect(valueOf(await running)).toEqual(['not found', false, false])
    expect(registry.catalog().describe('zz_late')).toContain('zz_late(args?: {')
  })

  it('catalog calls are not tool calls: no pipeline, no sub-call number, nothing in the session log', async () => {
    const { registry, sessionLog, run } = setup()
    const seen: string[] = []
    registry.on('tools/pre-execute', (decision, execution) => {
      seen.push(execution.name)
      return decision
    })
    valueOf(
      await run(`
        await catalog.search('bucket')
        await catalog.describe('storage_delete_bucket')
        await tools.storage_delete_bucket({ bucket_id: 'b' })
        await catalog.search('object')
      `),
    )
    expect(seen).toEqual(['run_code', 'storage_delete_bucket'])
    expect(sessionLog.events.map((event) => [event.type, event.name, event.subCallId])).toEqual([
      ['tool/code-dispatch-start', 'storage_delete_bucket', 'run-1:code:1'],
      ['tool/code-dispatch', 'storage_delete_bucket', 'run-1:code:1'],
    ])
  })
})

describe('catalog and the code runtime seam', () => {
  const exec = (): ToolRunContext =>
    ({ callId: 'c1', signal: new AbortController().signal, deferContext: () => {}, token: {} }) as unknown as ToolRunContext

  it('a code runtime that predates variadic namespaces passes the first argument alone: search still answers', async () => {
    const registry = createToolRuntime({ mode: 'code', codeRuntime: createInProcessRuntime() })
    registries.push(registry)
    registerLargeRegistry(registry, STORAGE)
    const result = await registry.execute({
      callId: 'c1',
      name: 'run_code',
      arguments: { description: 't', code: "return [(await catalog.search('bucket', { limit: 1 })).length, (await catalog.describe('storage_get_bucket')).split('\\n')[1]]" },
      signal: AbortSignal.timeout(10_000),
    })
    expect(valueOf(result)).toEqual([5, 'storage_get_bucket(args: {'])
  })

  it('a registry view without `catalog` gives the program no `catalog` global', async () => {
    const host = createTestHost({}, { runtime: createInProcessRuntime() })
    const output = await runCodeBridge(host, { code: "return typeof catalog + ' ' + typeof tools", description: 't' }, exec())
    expect(output.result).toBe('undefined object')
  })
})
