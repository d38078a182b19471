import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright'
import type { Browser } from 'playwright'
import type { StartedServer, StartServerOptions } from '../../examples/start.js'

/**
 * What every playground e2e file sets up the same way: Debian's Chromium with the flags this
 * machine needs (../shared/NOTES-env.md: without the background-networking flags it hangs on
 * network look-ups), and the `npm start` server (examples/start.ts) in this process, serving
 * the built playground on a free port.
 */

/** Chromium's flags for a headless run here: no sandbox, no GPU, no network of its own. */
export const CHROMIUM_ARGS: readonly string[] = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** The built playground (`npm run build` writes it). */
export const PLAYGROUND_DIST = fileURLToPath(new URL('../../demo/dist/', import.meta.url))

/** Launches `CHROMIUM_PATH`, else Debian's `/usr/bin/chromium` (never a downloaded one). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: [...CHROMIUM_ARGS] })
}

/**
 * Starts the `npm start` server in this process on a free port (unless `port` says which),
 * serving {@link PLAYGROUND_DIST}. Imported when called: a file that starts no server does not
 * load the server's module graph.
 */
export async function startPlayground(options: StartServerOptions & { readonly token: string }): Promise<StartedServer> {
  const { startServer } = await import('../../examples/start.js')
  return startServer({ port: 0, staticDir: PLAYGROUND_DIST, ...options })
}
