/**
 * The sandbox's global environment (src/code-runtime/in-sandbox/sandbox-globals.ts) captured in this
 * thread. QuickJS sandboxes run a bundled copy of the module, so the source itself is only
 * exercised here. `installSandboxGlobals` writes to `globalThis`: {@link sandboxGlobals}
 * installs, takes the values and puts this realm's own globals back before returning.
 *
 * The host op mirrors the QuickJS engine's (engine/quickjs/engine.ts): URL parsing by
 * this realm's WHATWG parser, components and query pairs as JSON text, randomness as hex.
 */
import { installSandboxGlobals, SANDBOX_GLOBAL_NAMES } from '../../../src/code-runtime/in-sandbox/sandbox-globals.js'
import type { SandboxHostOp } from '../../../src/code-runtime/in-sandbox/sandbox-globals.js'

/** The installed globals, typed as their web counterparts. */
export interface SandboxGlobals {
  readonly performance: { now(): number }
  readonly crypto: { getRandomValues<T extends ArrayBufferView>(array: T): T; randomUUID(): string }
  readonly URL: typeof URL
  readonly URLSearchParams: typeof URLSearchParams
  readonly TextEncoder: typeof TextEncoder
  readonly TextDecoder: typeof TextDecoder
  readonly atob: (data: unknown) => string
  readonly btoa: (data: unknown) => string
  readonly structuredClone: (value: unknown, options?: { transfer?: unknown }) => unknown
  /** How each was defined on `globalThis`. */
  readonly descriptors: Readonly<Record<string, PropertyDescriptor>>
}

const SETTERS = new Set(['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'])

const components = (url: URL | undefined): string => {
  if (url === undefined) return ''
  const { href, origin, protocol, username, password, host, hostname, port, pathname, search, hash } = url
  return JSON.stringify({ href, origin, protocol, username, password, host, hostname, port, pathname, search, hash })
}

const parse = (input: string, base?: string): URL | undefined => {
  try {
    return base === undefined ? new URL(input) : new URL(input, base)
  } catch {
    return undefined
  }
}

/** A host op like the engine's, with a fixed clock and a fixed byte source. */
export function fakeHost(options: { now?: number; random?: (n: number) => unknown } = {}): SandboxHostOp & { readonly ops: string[] } {
  const ops: string[] = []
  const op = (name: string, a?: unknown, b?: unknown, c?: unknown): unknown => {
    ops.push(name)
    switch (name) {
      case 'now':
        return options.now ?? 12.5
      case 'random': {
        if (options.random !== undefined) return options.random(a as number)
        let out = ''
        for (let i = 0; i < (a as number); i++) out += ((i * 37 + 11) & 0xff).toString(16).padStart(2, '0')
        return out
      }
      case 'url-parse':
        return typeof a === 'string' ? components(parse(a, typeof b === 'string' ? b : undefined)) : ''
      case 'url-set': {
        const url = typeof a === 'string' ? parse(a) : undefined
        if (url === undefined || typeof b !== 'string' || !SETTERS.has(b) || typeof c !== 'string') return components(url)
        if (b === 'href') return components(parse(c))
        ;(url as unknown as Record<string, string>)[b] = c
        return components(url)
      }
      case 'qs-parse':
        return JSON.stringify([...new URLSearchParams(a as string)])
      case 'qs-serialize': {
        const params = new URLSearchParams()
        for (const [k, v] of JSON.parse(a as string) as Array<[string, string]>) params.append(k, v)
        return params.toString()
      }
      default:
        return undefined
    }
  }
  return Object.assign(op, { ops })
}

/** Installs the sandbox globals with `host`, returns them, and restores this realm's globals. */
export function sandboxGlobals(host: SandboxHostOp = fakeHost()): SandboxGlobals {
  const saved = SANDBOX_GLOBAL_NAMES.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)] as const)
  // The journaled clock replaces Date (and Date.prototype.constructor) and Math.random too:
  // left installed, every later test file of a shared module graph (Stryker's runs,
  // isolate: false) would read this fake host's clock (Date.now() → NaN arithmetic).
  const clock = [
    [globalThis, 'Date', Object.getOwnPropertyDescriptor(globalThis, 'Date')],
    [Date.prototype, 'constructor', Object.getOwnPropertyDescriptor(Date.prototype, 'constructor')],
    [Math, 'random', Object.getOwnPropertyDescriptor(Math, 'random')],
  ] as const
  try {
    installSandboxGlobals(host)
    const descriptors: Record<string, PropertyDescriptor> = {}
    for (const name of SANDBOX_GLOBAL_NAMES) descriptors[name] = Object.getOwnPropertyDescriptor(globalThis, name)!
    const value = (name: string) => descriptors[name]!.value as never
    return {
      performance: value('performance'),
      crypto: value('crypto'),
      URL: value('URL'),
      URLSearchParams: value('URLSearchParams'),
      TextEncoder: value('TextEncoder'),
      TextDecoder: value('TextDecoder'),
      atob: value('atob'),
      btoa: value('btoa'),
      structuredClone: value('structuredClone'),
      descriptors,
    }
  } finally {
    for (const [name, descriptor] of saved) {
      if (descriptor === undefined) Reflect.deleteProperty(globalThis, name)
      else Object.defineProperty(globalThis, name, descriptor)
    }
    for (const [target, key, descriptor] of clock) Object.defineProperty(target, key, descriptor!)
  }
}
