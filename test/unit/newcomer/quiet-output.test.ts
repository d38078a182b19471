/**
 * A quiet test run: vite's optimizer progress lines ("[optimizer] scanning dependencies...",
 * "… bundling dependencies...", printed by the browser project on a fresh clone) are
 * dropped by the browser config's plugin, and nothing else is.
 */
import { describe, expect, it } from 'vitest'
import type { Logger, ResolvedConfig } from 'vite'
import { quietOptimizerProgress } from '../../support/quiet-output.js'
import browserConfig from '../../../vitest.browser.config.js'

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
