/**
 * Lines a green `npm test` run must not print, because a newcomer reads them as problems:
 * each is dropped where it is printed, and only when it is exactly that line.
 *
 * @module
 */
import type { Plugin } from 'vite'

/**
 * Vite's dependency optimizer announcing its work on a fresh clone: "(client) [optimizer]
 * scanning dependencies..." and "… bundling dependencies...". Routine, not news.
 */
export const OPTIMIZER_PROGRESS = /\[optimizer\] (?:scanning|bundling) dependencies\.\.\.$/

/** A vite plugin that drops the optimizer's progress lines from the info log. */
export function quietOptimizerProgress(): Plugin {
  return {
    name: 'toolyard:quiet-optimizer-progress',
    configResolved(config) {
      const logger = config.logger
      const info = logger.info
      logger.info = (message, options) => {
        if (!OPTIMIZER_PROGRESS.test(message)) info.call(logger, message, options)
      }
    },
  }
}
