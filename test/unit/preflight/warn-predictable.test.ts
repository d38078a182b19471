/**
 * Preflight you can predict (`'warn'`): a run that ends before its check waits for it a
 * little (`WARN_WAIT_ON_SUCCESS_MS`), so the same program reads the same on every send —
 * here the check answers only after the run has settled (a timer armed when it settles),
 * which without the wait left the first send's mistakes out. A misspelled argument is a
 * mistake like a misspelled tool, and a syntax error is said once.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { loadTypeScript } from '../../../platforms/node/index.js'
import { createInlinePreflightEngine } from '../../../src/preflight/inline-engine.js'
import type { PreflightEngine } from '../../../src/preflight/types.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const inner = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 60_000, wasmModule })
const engine = createInlinePreflightEngine({ load: loadTypeScript })
afterAll(() => inner.dispose())
// The compiler loads before the cases: a cold load on a loaded machine outlasts the registry's 10 s check budget, which is not what is tested here.
beforeAll(() => engine.analyze({ program: 'return 1', language: 'typescript', declarations: 'declare const tools: {}' }), 120_000)

/**
 * A code runtime and an engine in step: each run starts once its check has its answer,
 * and the check hands the answer over only on the timer turn after the run settled — the
 * run always ends first, whatever the machine's load.
 */
function slowCheckSetup() {
  const step = () => {
    let done!: () => void
    const promise = new Promise<void>((resolve) => (done = resolve))
    return { promise, done }
  }
  let analyzed = step()
  let settled = step()
  const codeRuntime: CodeRuntime = {
    language: inner.language,
    isolation: inner.isolation,
    capabilities: inner.capabilities,
    run: async (request) => {
      await analyzed.promise
      try {
        return await inner.run(request)
      } finally {
        settled.done()
      }
    },
    dispose: async () => {},
  }
  const held: PreflightEngine = {
    where: 'inline',
    analyze: async (request) => {
      const answer = await engine.analyze(request)
      analyzed.done()
      await settled.promise
      analyzed = step()
      settled = step()
      await new Promise((resolve) => setTimeout(resolve, 0))
      return answer
    },
    dispose: async () => {},
  }
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, preflight: 'warn', preflightEngine: held })
  runtime.register(
    defineTool({
      name: 'read_file',
      description: 'Read a file.',
      parameters: { path: { type: 'string', required: true }, limit: { type: 'integer' } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => `read ${args.path}`,
    }),
  )
  runtime.register(
    defineTool({
      name: 'delete_file',
      description: 'Delete a file.',
      parameters: { path: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: () => 'deleted',
    }),
  )
  const run = (code: string): Promise<ToolExecutionResult> =>
    runtime.execute({ callId: `c${Math.random()}`, name: 'run_code', arguments: { code, description: 'test' }, signal: AbortSignal.timeout(30_000) })
  return { runtime, run }
}

const text = (result: ToolExecutionResult): string => result.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n')

describe("preflight 'warn' you can predict", () => {
  it('a misspelled tool on an untaken branch is reported on the first send as on the next ones', async () => {
    const { run, runtime } = slowCheckSetup()
    const program = 'const doomed = false\nif (doomed) await tools.delete_filez({ path: "a" })\nreturn "ok"'
    const outputs = [text(await run(program)), text(await run(program)), text(await run(program))]
    expect(outputs[0]).toMatch(/^ok\n\nPreflight \(type-check against the tools SDK, before the run\) found 1 problem:\n {2}line 2, column 25: TS\d+ tools\.delete_filez is not a tool this program can call; did you mean tools\.delete_file\?$/)
    expect(outputs[1]).toBe(outputs[0])
    expect(outputs[2]).toBe(outputs[0])
    await runtime.dispose()
  })

  it('a misspelled argument is listed: the SDK declares only the parameters the tool reads', async () => {
    const { run, runtime } = slowCheckSetup()
    const result = await run('return await tools.read_file({ path: "a", limt: 2 })')
    expect(result.isError).toBe(false)
    expect(text(result)).toMatch(/^read a\n\nPreflight .* found 1 problem:\n {2}line 1, column 43: TS2561 Object literal may only specify known properties, but 'limt' does not exist in type '\{ path: string; limit\?: number; \}'\. Did you mean to write 'limit'\?$/)
    await runtime.dispose()
  })

  it('a syntax error is said once: the run’s error, not again as a preflight problem', async () => {
    const { run, runtime } = slowCheckSetup()
    const result = await run('await tools.read_file({ path: "a" }')
    expect(result.isError).toBe(true)
    expect(text(result)).toMatch(/SyntaxError/)
    expect(text(result)).not.toMatch(/SYNTAX|Preflight/)
    expect(text(result).match(/Unexpected token/g)).toHaveLength(1)
    await runtime.dispose()
  })
})
