/**
 * A throwaway PostgreSQL cluster for tests: Debian's binaries, a temp directory, a free
 * port on 127.0.0.1, run as the unprivileged `postgres` user when the tests run as root
 * (PostgreSQL refuses root). `startPostgres()` answers `{ skip }` when no binaries exist.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A running cluster. */
export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, local only). */
  readonly url: string
  readonly port: number
  /** Stops the server (immediate mode, bounded) and removes its directory. Idempotent. */
  stop(): void
}

/** Where Debian installs PostgreSQL; the newest version wins. */
export function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a))
  for (const version of versions) {
    const bin = join(root, version, 'bin')
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return bin
  }
  return undefined
}

/** Why PostgreSQL tests cannot run here, or `undefined` when they can. */
export function postgresSkipReason(): string | undefined {
  return findPostgresBin() === undefined
    ? 'PostgreSQL binaries not found under /usr/lib/postgresql/*/bin (Debian package `postgresql`; .ci/run installs it)'
    : undefined
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0

/** Runs a PostgreSQL binary, as `postgres` when we are root; bounded by `timeoutMs`. */
function runPg(bin: string, args: string[], timeoutMs: number): void {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args]
  execFileSync(cmd, argv, { stdio: 'pipe', timeout: timeoutMs, killSignal: 'SIGKILL' })
}

/** Starts a fresh cluster (about 1–2 s: `initdb` without fsync, then `pg_ctl start -w`); the server runs with `fsync=off` unless `fsync: true` (benchmarks). */
export async function startPostgres(options: { readonly fsync?: boolean } = {}): Promise<PostgresCluster> {
  const bin = findPostgresBin()
  if (bin === undefined) throw new Error(postgresSkipReason())
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-pg-'))
  const data = join(dir, 'data')
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    chownSync(dir, uid, gid)
  }
  chmodSync(dir, 0o700)
  const port = await freePort()
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    try {
      runPg(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', '-t', '10', 'stop'], 15_000)
    } catch {
      // Already down (or never up): the directory goes anyway.
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    runPg(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync'], 60_000)
    const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=${options.fsync === true ? 'on' : 'off'} -c max_connections=200`
    runPg(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), '-o', serverOptions, '-w', '-t', '30', 'start'], 40_000)
  } catch (error) {
    const log = existsSync(join(dir, 'server.log')) ? readFileSync(join(dir, 'server.log'), 'utf8').slice(-2000) : ''
    stop()
    throw new Error(`could not start PostgreSQL: ${(error as Error).message}\n${log}`)
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, stop }
}
