/**
 * A quiet test run: vite's optimizer progress lines ("[optimizer] scanning dependencies...",
 * "… bundling dependencies...", printed by the browser project on a fresh clone) are
 * dropped by the browser config's plugin, and nothing else is.
 */
import { describe, expect, it } from 'vitest'
import type { Logger, ResolvedConfig } from 'vite'
import { quietOptimizerProgress, withoutWorkerdDisconnects } from '../../support/quiet-output.js'
import browserConfig from '../../../vitest.browser.config.js'
import workerdConfig from '../../../vitest.workerd.config.js'

describe('quietOptimizerProgress', () => {
  it('drops exactly the optimizer progress lines from the info log', () => {
    const printed: string[] = []
    const logger = { info: (message: string) => printed.push(message) } as unknown as Logger
    const plugin = quietOptimizerProgress()
    ;(plugin.configResolved as (config: ResolvedConfig) => void)({ logger } as ResolvedConfig)
    for (const line of ['(client) [optimizer] scanning dependencies...', '(client) [optimizer] bundling dependencies...', '(client) ✨ new dependencies optimized: ajv', 'ready in 120 ms']) logger.info(line)
    expect(printed).toEqual(['(client) ✨ new dependencies optimized: ajv', 'ready in 120 ms'])
  })

  it('the browser project uses it, and pre-bundles what its suites import (no optimizing mid-run)', () => {
    const config = browserConfig as { plugins?: { name?: string }[]; optimizeDeps?: { include?: string[] } }
    expect(config.plugins?.map((p) => p.name)).toContain('toolyard:quiet-optimizer-progress')
    expect(config.optimizeDeps?.include).toEqual(expect.arrayContaining(['ajv', 'hono/http-exception']))
  })
})

describe('withoutWorkerdDisconnects', () => {
  it('drops exactly the workerd runner-socket disconnect line, passes everything else with its arguments', () => {
    const written: unknown[][] = []
    const write = withoutWorkerdDisconnects((chunk, ...rest) => written.push([chunk, ...rest]) > 0)
    const done = () => {}
    expect(write('exception = workerd/api/web-socket.c++:821: disconnected: WebSocket peer disconnected\n')).toBe(true)
    write('exception = workerd/api/web-socket.c++:821: disconnected: WebSocket peer disconnected; and more\n')
    write('exception = workerd/io/worker.c++:12: uncaught exception\n')
    write(' FAIL  workerd  test/x.test.ts\n', 'utf8' as never, done as never)
    const bytes = new Uint8Array([1])
    write(bytes)
    expect(written).toEqual([
      ['exception = workerd/api/web-socket.c++:821: disconnected: WebSocket peer disconnected; and more\n'],
      ['exception = workerd/io/worker.c++:12: uncaught exception\n'],
      [' FAIL  workerd  test/x.test.ts\n', 'utf8', done],
      [bytes],
    ])
  })

  it('the workerd project uses it', () => {
    const config = workerdConfig as { plugins?: { name?: string }[] }
    expect(config.plugins?.flat().map((p) => p?.name)).toContain('toolyard:quiet-workerd-disconnects')
  })
})
