/**
 * Chromium for the browser benches: Debian's `/usr/bin/chromium` (or `CHROMIUM_PATH`) with the
 * flags this machine needs (../shared/NOTES-env.md: without the network flags it hangs on look-ups).
 *
 * @module
 */
import { chromium } from 'playwright'
import type { Browser } from 'playwright'

/** Launches headless Chromium for a bench; the caller closes it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}
