/**
 * The part of vitest's API the contract suites use (`describe`, `it`, `it.each`,
 * `it.skipIf`, `describe.skip`/`describe.skipIf`, hooks, `expect`), as a tiny sequential runner for Deno and Bun: the bundler
 * (bundle.ts) substitutes it for `vitest`, so both runtimes run the suites' own cases.
 * @module
 */
import * as chai from 'chai'
import { ASYMMETRIC_MATCHERS_OBJECT, JestAsymmetricMatchers, JestChaiExpect, JestExtend } from '@vitest/expect'

// vitest's own matchers (toEqual, toMatchObject, rejects, asymmetric matchers…), so an assertion means the same here.
chai.use(JestExtend)
chai.use(JestChaiExpect)
chai.use(JestAsymmetricMatchers)

type Expect = typeof import('vitest').expect

/** vitest's `expect`, without the test-context extras (`poll`, `soft`, snapshots). */
export const expect: Expect = Object.assign((value: unknown, message?: string) => chai.expect(value, message), chai.expect, (globalThis as Record<symbol, unknown>)[ASYMMETRIC_MATCHERS_OBJECT]) as unknown as Expect

type Body = () => unknown
type Hook = () => unknown

interface Case {
  readonly name: string
  readonly body: Body
  readonly timeoutMs: number
  readonly skip: boolean
}

interface Suite {
  readonly name: string
  readonly parent: Suite | undefined
  readonly children: Array<Case | Suite>
  readonly beforeEach: Hook[]
  readonly afterEach: Hook[]
  readonly beforeAll: Hook[]
  readonly afterAll: Hook[]
  /** Set by `describe.skip`/`describe.skipIf`, or inherited: every case in it is skipped and its hooks never run. */
  readonly skip: boolean
}

const newSuite = (name: string, parent: Suite | undefined, skip = false): Suite => ({ name, parent, children: [], beforeEach: [], afterEach: [], beforeAll: [], afterAll: [], skip: skip || parent?.skip === true })

const root = newSuite('', undefined)
let current = root

/** The per-case timeout when a case names none (vitest's `node` project uses the same). */
export const DEFAULT_TIMEOUT_MS = 30_000

/** vitest's `%s`-style title: each `%s`/`%d`/`%i`/`%j`/`%o` takes the next argument. */
function title(template: string, args: readonly unknown[]): string {
  let i = 0
  return template.replace(/%[sdijo%]/g, (token) => {
    if (token === '%%') return '%'
    const arg = args[i++]
    return token === '%j' || token === '%o' ? JSON.stringify(arg) : String(arg)
  })
}

type CaseFn = (name: string, body: Body, timeoutMs?: number) => void
type EachFn = <T>(table: readonly T[]) => (name: string, body: (...args: never[]) => unknown, timeoutMs?: number) => void

function caseFn(skip: boolean): CaseFn & { each: EachFn } {
  const add: CaseFn = (name, body, timeoutMs = DEFAULT_TIMEOUT_MS) => {
    current.children.push({ name, body, timeoutMs, skip: skip || current.skip })
  }
  const each: EachFn = (table) => (name, body, timeoutMs) => {
    for (const row of table) {
      const args = Array.isArray(row) ? row : [row]
      add(title(name, args), () => (body as (...a: unknown[]) => unknown)(...args), timeoutMs)
    }
  }
  return Object.assign(add, { each })
}

const run = caseFn(false)
const skipped = caseFn(true)

/** Registers a case; `it.each`, `it.skip` and `it.skipIf(condition)` as in vitest. */
export const it = Object.assign(run, {
  skip: skipped,
  skipIf: (condition: unknown) => (condition ? skipped : run),
})

function group(skip: boolean) {
  return (name: string, body: () => void): void => {
    const suite = newSuite(name, current, skip)
    current.children.push(suite)
    current = suite
    try {
      body()
    } finally {
      current = suite.parent!
    }
  }
}

/**
 * Registers a group of cases (collected at once, as vitest's collection phase does);
 * `describe.skip` and `describe.skipIf(condition)` collect it with every case skipped.
 */
export const describe = Object.assign(group(false), {
  skip: group(true),
  skipIf: (condition: unknown) => group(Boolean(condition)),
})

const skipRules: Array<{ readonly match: (name: string) => boolean; readonly reason: string }> = []

/** Not vitest's: skips every case whose full name `match`es, and reports it as `name (skipped: reason)`. */
export function skipWhere(match: (name: string) => boolean, reason: string): void {
  skipRules.push({ match, reason })
}

/** Hooks, scoped to the enclosing `describe` (or the whole file). */
export const beforeEach = (hook: Hook): void => void current.beforeEach.push(hook)
export const afterEach = (hook: Hook): void => void current.afterEach.push(hook)
export const beforeAll = (hook: Hook): void => void current.beforeAll.push(hook)
export const afterAll = (hook: Hook): void => void current.afterAll.push(hook)

/** One case's outcome. */
export interface CaseResult {
  readonly name: string
  readonly outcome: 'passed' | 'failed' | 'skipped'
  readonly ms: number
  readonly error?: string
}

function withTimeout(work: Promise<unknown>, ms: number, what: string): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out in ${ms} ms`)), ms)
  })
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer))
}

const describeError = (error: unknown): string => (error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error))

function chainOf(suite: Suite): Suite[] {
  const chain: Suite[] = []
  for (let s: Suite | undefined = suite; s !== undefined; s = s.parent) chain.unshift(s)
  return chain
}

async function runCase(suite: Suite, entry: Case, name: string, report: (result: CaseResult) => void): Promise<void> {
  if (entry.skip) return report({ name, outcome: 'skipped', ms: 0 })
  const started = performance.now()
  const chain = chainOf(suite)
  let error: unknown
  try {
    for (const s of chain) for (const hook of s.beforeEach) await withTimeout(Promise.resolve(hook()), DEFAULT_TIMEOUT_MS, 'beforeEach')
    await withTimeout(Promise.resolve().then(entry.body), entry.timeoutMs, 'case')
  } catch (caught) {
    error = caught
  }
  for (const s of chain.reverse()) {
    for (const hook of s.afterEach) {
      try {
        await withTimeout(Promise.resolve(hook()), DEFAULT_TIMEOUT_MS, 'afterEach')
      } catch (caught) {
        error ??= caught
      }
    }
  }
  const ms = Math.round(performance.now() - started)
  report(error === undefined ? { name, outcome: 'passed', ms } : { name, outcome: 'failed', ms, error: describeError(error) })
}

async function runSuite(suite: Suite, prefix: string, filter: (name: string) => boolean, report: (result: CaseResult) => void): Promise<void> {
  // A skipped group's hooks would set up what none of its cases use (vitest skips them too).
  if (!suite.skip) for (const hook of suite.beforeAll) await hook()
  for (const child of suite.children) {
    if ('body' in child) {
      const name = `${prefix}${child.name}`
      const rule = child.skip ? undefined : skipRules.find((r) => r.match(name))
      if (!filter(name)) continue
      if (rule === undefined) await runCase(suite, child, name, report)
      else report({ name: `${name} (skipped: ${rule.reason})`, outcome: 'skipped', ms: 0 })
    } else {
      await runSuite(child, `${prefix}${child.name} > `, filter, report)
    }
  }
  if (!suite.skip) for (const hook of suite.afterAll) await hook()
}

/** Runs every registered case in order, reporting each as it settles; returns them all. */
export async function runRegistered(options: { readonly filter?: (name: string) => boolean; readonly report?: (result: CaseResult) => void } = {}): Promise<CaseResult[]> {
  const results: CaseResult[] = []
  await runSuite(root, '', options.filter ?? (() => true), (result) => {
    results.push(result)
    options.report?.(result)
  })
  return results
}
