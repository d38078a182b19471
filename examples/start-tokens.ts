/**
 * `npm start`'s two bearer tokens — the API token (`run`: agents and scripts) and the
 * playground's (`run` + `approve`: the person) — kept in `<data dir>/tokens.json` (0600)
 * so they survive a restart; `TOOLYARD_TOKEN` / `TOOLYARD_APPROVER_TOKEN` override them.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ToolError } from '../src/errors.js'

/** The tokens file's name inside the data directory. */
export const TOKENS_FILE = 'tokens.json'

/**
 * What a client without a valid token is told (appended to every 401). It names no path:
 * anyone can read it, and the operator knows where the data directory is.
 */
export const UNAUTHORIZED_HINT =
  'the server prints its two tokens (API and playground) when it starts and keeps them in tokens.json in its data directory (TOOLYARD_DATA_DIR, default .toolyard/); set TOOLYARD_TOKEN or TOOLYARD_APPROVER_TOKEN to pin them'

/** The two tokens of a server. */
export interface StartTokens {
  /** `run` only: for agents and scripts. */
  readonly api: string
  /** `run` + `approve`: the person at the playground (injected into its page). */
  readonly playground: string
}

const TOKEN = /^[\x21-\x7e]{16,4096}$/

function fresh(): string {
  return randomBytes(32).toString('hex')
}

/** The file's tokens, or `undefined` when it is absent; anything else that is not ours is reported by `warn` and replaced. */
function readTokens(file: string, warn: (message: string) => void): StartTokens | undefined {
  let text: string
  try {
    // Only a regular file, and a small one: anything else is not a tokens file.
    const stat = statSync(file)
    if (!stat.isFile() || stat.size > 64 * 1024) throw new Error('not a small regular file')
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    warn(`${file} could not be read (${(error as Error).message}); new tokens replace it`)
    return undefined
  }
  try {
    const parsed = JSON.parse(text) as Partial<StartTokens>
    if (typeof parsed.api === 'string' && TOKEN.test(parsed.api) && typeof parsed.playground === 'string' && TOKEN.test(parsed.playground) && parsed.api !== parsed.playground) {
      return { api: parsed.api, playground: parsed.playground }
    }
  } catch {
    // Reported below.
  }
  warn(`${file} is not a tokens file this server wrote; new tokens replace it`)
  return undefined
}

/** Writes `tokens` to `file` (0600): exclusively when `replace` is false (another process may be creating it too). */
function writeTokens(file: string, tokens: StartTokens, replace: boolean): boolean {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  writeFileSync(temporary, `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600, flag: 'wx' })
  try {
    if (replace) renameSync(temporary, file)
    else linkSync(temporary, file)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  } finally {
    rmSync(temporary, { force: true })
  }
}

/**
 * The tokens kept in `dataDir` (created 0600 with two fresh tokens on first use; a file
 * that is not ours is replaced, said through `warn`), with `env`'s overrides applied.
 * Without a data directory, fresh tokens that live as long as the process. A start-up a
 * person can fix throws `INVALID_OPTIONS` naming what to change (`npm start` prints it as one
 * line): a pinned token the app would refuse, two tokens that are one, a data directory
 * that cannot hold the file.
 */
export function loadStartTokens(dataDir: string | undefined, env: NodeJS.ProcessEnv, warn: (message: string) => void = console.warn): StartTokens & { readonly file?: string } {
  const overrides = { api: pinned(env, 'TOOLYARD_TOKEN'), playground: pinned(env, 'TOOLYARD_APPROVER_TOKEN') }
  if (dataDir === undefined) return distinct({ api: overrides.api ?? fresh(), playground: overrides.playground ?? fresh() })
  const file = join(dataDir, TOKENS_FILE)
  let kept: StartTokens
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    kept = readTokens(file, warn) ?? createTokens(file, warn)
    // An older file may have been readable by others: tokens are secrets.
    chmodSync(file, 0o600)
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException
    if (typeof code !== 'string') throw error
    throw new ToolError(
      'INVALID_OPTIONS',
      `the data directory ${dataDir} (TOOLYARD_DATA_DIR) cannot hold ${TOKENS_FILE}: ${message}; point TOOLYARD_DATA_DIR at a directory this user can create and write (default .toolyard/ here)`,
      { cause: error },
    )
  }
  return { ...distinct({ api: overrides.api ?? kept.api, playground: overrides.playground ?? kept.playground }), file }
}

/** Two fresh tokens written to `file`, or the ones another process wrote there first. */
function createTokens(file: string, warn: (message: string) => void): StartTokens {
  const created = { api: fresh(), playground: fresh() }
  const exists = (() => {
    try {
      statSync(file)
      return true
    } catch {
      return false
    }
  })()
  // Lost a race with another process creating it: theirs is the file.
  return writeTokens(file, created, exists) ? created : (readTokens(file, warn) ?? created)
}

/**
 * An environment variable's token, checked as the app checks tokens (its value is never
 * printed: it is a secret); `undefined` when unset or empty.
 */
function pinned(env: NodeJS.ProcessEnv, name: 'TOOLYARD_TOKEN' | 'TOOLYARD_APPROVER_TOKEN'): string | undefined {
  const value = env[name]
  if (value === undefined || value === '') return undefined
  if (!TOKEN.test(value)) {
    throw new ToolError('INVALID_OPTIONS', `${name} must be 16–4096 printable ASCII characters without spaces (got ${value.length} characters${/[^\x21-\x7e]/.test(value) ? ', not all of them printable ASCII' : ''}); unset it to use the token kept in tokens.json, or pin one such as the output of openssl rand -hex 32`)
  }
  return value
}

/** The two tokens, refused when they are one: each names one principal (the person's also decides approvals). */
function distinct(tokens: StartTokens): StartTokens {
  if (tokens.api === tokens.playground) {
    throw new ToolError('INVALID_OPTIONS', 'TOOLYARD_TOKEN and TOOLYARD_APPROVER_TOKEN (or one of them and the other token kept in tokens.json) are the same token: the API token only runs, the playground token also decides approvals, so they must differ')
  }
  return tokens
}
