/**
 * A misspelt option of a public factory is refused (`INVALID_OPTIONS`, naming the option, the
 * closest known name and every known one), never ignored: `createToolsApp(runtime, { auth:
 * false, maxBodyByte: 1024 })` used to serve with the 1 MiB default, `runs: { maxRun: 4 }` kept
 * 256 runs, `serve(app, { maxConnection: 8 })` allowed 1,024 connections, and
 * `createFileStore(dir, { maxValueByte: 10 })` took 1 MiB values, all without a word, while
 * `createToolRuntime`, `createSandboxRuntime`, `createApprovalBroker` and each entry of
 * `tokens` already refused what they do not read. One check (`refuseUnknownOptions`) for
 * every options object of those factories, nested ones (`cors`, `runs`) included.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createToolRuntime, runToolCalls } from '../../../src/registry/index.js'
import { refuseUnknownOptions } from '../../../src/util/unknown-field.js'
import { createFileStore } from '../../../platforms/node/file-store.js'
import { createDurableObjectStore } from '../../../platforms/edge/durable-object-store.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { serve } from '../../../platforms/node/serve.js'
import { createPostgresStore } from '../../../platforms/postgres/index.js'
import { thrownToolError as refusal } from '../../support/refusal.js'

async function asyncRefusal(fn: () => Promise<unknown>): Promise<{ code: string; message: string } | undefined> {
  try {
    const served = (await fn()) as { close?: () => Promise<void> } | undefined
    await served?.close?.()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError)
    return { code: (error as ToolError).code, message: (error as ToolError).message }
  }
  return undefined
}

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

describe('createToolsApp: every options object refuses a name it does not read', () => {
  const runtime = createToolRuntime({})

  it('a misspelt top-level bound, naming the closest option', () => {
    expect(refusal(() => createToolsApp(runtime, { auth: false, maxBodyByte: 1024 } as never))).toEqual({
      code: 'INVALID_OPTIONS',
      message: expect.stringMatching(/^createToolsApp: unknown option "maxBodyByte" \(did you mean "maxBodyBytes"\? known: token, tokens, auth, .*heartbeatMs, runs, mcp\)$/),
    })
    expect(refusal(() => createToolsApp(runtime, { auth: false, unauthorizedhint: 'see the docs' } as never))?.message).toContain('did you mean "unauthorizedHint"?')
    expect(refusal(() => createToolsApp(runtime, { auth: false, hearbeatMs: 0 } as never))?.message).toContain('did you mean "heartbeatMs"?')
  })

  it('inside runs and cors, with the nested name', () => {
    expect(refusal(() => createToolsApp(runtime, { auth: false, runs: { maxRun: 4 } } as never))?.message).toBe(
      'createToolsApp: unknown option "runs.maxRun" (did you mean "runs.maxRuns"? known: runs.maxRuns, runs.maxBytes, runs.maxEventBytesPerRun, runs.retentionMs, runs.maxStreams)',
    )
    expect(refusal(() => createToolsApp(runtime, { auth: false, cors: { origins: ['https://app.example'], maxAge: 5 } } as never))?.message).toBe(
      'createToolsApp: unknown option "cors.maxAge" (did you mean "cors.maxAgeSeconds"? known: cors.origins, cors.maxAgeSeconds)',
    )
    expect(refusal(() => createToolsApp(runtime, { auth: false, cors: ['https://app.example'] } as never))?.message).toBe(
      'createToolsApp: cors.origins must be a non-empty array',
    )
  })

  it('still answers a moved option with where it went (checked first), and accepts every documented one', () => {
    expect(refusal(() => createToolsApp(runtime, { auth: false, store: {} } as never))?.message).toMatch(/store is no longer an option here/)
    const signal = new AbortController().signal
    expect(
      refusal(() =>
        createToolsApp(runtime, {
          tokens: [{ token: 'a'.repeat(16), roles: ['run'] }],
          unauthorizedHint: 'ask the operator',
          cors: { origins: ['https://app.example'], maxAgeSeconds: 60 },
          maxBodyBytes: 1024,
          signal,
          maxStreamBacklogBytes: 1024,
          streamWriteTimeoutMs: 1000,
          onError: () => {},
          heartbeatMs: 0,
          runs: { maxRuns: 1, maxBytes: 1, maxEventBytesPerRun: 1, retentionMs: 1, maxStreams: 1 },
          mcp: true,
        }),
      ),
    ).toBeUndefined()
  })
})

describe('createToolRuntime({ runs })', () => {
  it('refuses runs.maxFollower, naming runs.maxFollowers', () => {
    expect(refusal(() => createToolRuntime({ runs: { maxFollower: 3 } } as never))?.message).toBe(
      'createToolRuntime: unknown option "runs.maxFollower" (did you mean "runs.maxFollowers"? known: runs.resumeEveryMs, runs.staleMs, runs.maxFollowers)',
    )
    expect(refusal(() => createToolRuntime({ runs: { resumeEveryMs: 1000, staleMs: 1000, maxFollowers: 2 } }))).toBeUndefined()
  })
})

describe('runToolCalls', () => {
  it('refuses maxParalel (a pool left at 10 without a word before), naming maxParallel; takes maxParallel', async () => {
    const runtime = createToolRuntime({})
    await expect(runToolCalls(runtime, [], { maxParalel: 2 } as never)).rejects.toThrow('runToolCalls: unknown option "maxParalel" (did you mean "maxParallel"? known: maxParallel)')
    await expect(runToolCalls(runtime, [], { maxParallel: 2 })).resolves.toEqual([])
    await runtime.dispose()
  })
})

describe('the stores and serve', () => {
  it('createFileStore refuses maxValueByte, and takes its three options', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolyard-unknown-options-'))
    dirs.push(dir)
    expect(refusal(() => createFileStore(dir, { maxValueByte: 10 } as never))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'createFileStore: unknown option "maxValueByte" (did you mean "maxValueBytes"? known: maxValueBytes, staleLockMs, lockTimeoutMs)',
    })
    expect(refusal(() => createFileStore(dir, { maxValueBytes: 10, staleLockMs: 1000, lockTimeoutMs: 1000 }))).toBeUndefined()
  })

  it('createPostgresStore refuses a misspelt option before it touches the pool', () => {
    let queries = 0
    const pool = { query: async () => ((queries += 1), { rows: [] }) }
    expect(refusal(() => createPostgresStore({ pool, tabel: 'toolyard_kv' } as never))?.message).toBe(
      'createPostgresStore: unknown option "tabel" (did you mean "table"? known: pool, table, createTable, log, maxValueBytes)',
    )
    expect(queries).toBe(0)
  })

  it('serve refuses maxConnection before it listens, and options that are not an object', async () => {
    const app = createToolsApp(createToolRuntime({}), { auth: false })
    expect(await asyncRefusal(() => serve(app, { port: 0, maxConnection: 8 } as never))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'serve: unknown option "maxConnection" (did you mean "maxConnections"? known: port, hostname, allowedHosts, requestTimeoutMs, headersTimeoutMs, maxConnections)',
    })
    expect(await asyncRefusal(() => serve(app, 'port 0' as never))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'serve: options must be an object',
    })
  })
})

describe('the memory and Durable Object stores, createMcpApp, and options that are not an object', () => {
  it('createMemoryStore and createDurableObjectStore refuse maxValueByte, and take maxValueBytes', () => {
    expect(refusal(() => createMemoryStore({ maxValueByte: 10 } as never))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'createMemoryStore: unknown option "maxValueByte" (did you mean "maxValueBytes"? known: maxValueBytes)',
    })
    expect(refusal(() => createMemoryStore({ maxValueBytes: 10 }))).toBeUndefined()
    const storage = { get: async () => new Map(), put: async () => {}, delete: async () => true, list: async () => new Map(), transaction: async () => undefined }
    expect(refusal(() => createDurableObjectStore(storage as never, { maxValueByte: 10 } as never))?.message).toBe(
      'createDurableObjectStore: unknown option "maxValueByte" (did you mean "maxValueBytes"? known: maxValueBytes)',
    )
  })

  it('createMcpApp refuses a misspelt MCP or server option, naming the closest, before it reads any', () => {
    const runtime = createToolRuntime({})
    expect(refusal(() => createMcpApp(runtime, { auth: false, maxBatchLenght: 4 } as never))?.message).toMatch(
      /^createMcpApp: unknown option "maxBatchLenght" \(did you mean "maxBatchLength"\? known: token, tokens, .*, agent, maxBatchLength, maxBatchResponseBytes, serverInfo, instructions\)$/,
    )
    // A misspelt token is named, not told as a missing one.
    expect(refusal(() => createMcpApp(runtime, { tokns: [] } as never))?.message).toContain('unknown option "tokns" (did you mean "tokens"?')
    expect(refusal(() => createMcpApp(runtime, { auth: false, agent: 'a', maxBatchLength: 4, serverInfo: { name: 'n', version: '1' }, instructions: 'i' }))).toBeUndefined()
  })

  it('createToolsApp names a misspelt token option rather than asking for a token; an array is not an options object', () => {
    const runtime = createToolRuntime({})
    expect(refusal(() => createToolsApp(runtime, { tokn: 'a'.repeat(32) } as never))?.message).toContain('unknown option "tokn" (did you mean "token"?')
    expect(refusal(() => createToolsApp(runtime, [] as never))).toEqual({ code: 'INVALID_OPTIONS', message: 'createToolsApp: options must be an object' })
    expect(refusal(() => createMcpApp(runtime, [] as never))).toEqual({ code: 'INVALID_OPTIONS', message: 'createMcpApp: options must be an object' })
  })
})

describe('refuseUnknownOptions', () => {
  const fail = (message: string): never => {
    throw new Error(message)
  }

  it('passes undefined, non-objects and known names; cuts a long unknown name', () => {
    expect(() => refuseUnknownOptions(undefined, ['a'], fail)).not.toThrow()
    expect(() => refuseUnknownOptions('x', ['a'], fail)).not.toThrow()
    expect(() => refuseUnknownOptions({ a: 1 }, ['a'], fail)).not.toThrow()
    expect(() => refuseUnknownOptions({ ['z'.repeat(100)]: 1 }, ['a'], fail)).toThrow(`unknown option "${'z'.repeat(64)}"… (100 characters) (known: a)`)
  })
})
