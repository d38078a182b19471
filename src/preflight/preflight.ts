/**
 * The host side of preflight: asks an engine for a program's plan and diagnostics, classifies the
 * diagnostics against the allowlist, and renders what a model reads.
 * @module
 */
import { renderTypeScriptSdkBlock } from '../code-mode/sdk-typescript.js'
import type { SdkToolInput } from '../code-mode/sdk-common.js'
import { closestNames } from '../code-runtime/closest-names.js'
import { LineIndex } from './line-index.js'
import { checkNote } from './analyze.js'
import type { PreflightDiagnostic, PreflightEngine, PreflightEngineResult, PreflightReport, RawDiagnostic, ToolSpan } from './types.js'

/** Diagnostics that matter wherever they are: an unknown name, and its variants that name a missing lib (`document`, `require`, `process`, `Buffer`). */
const ANYWHERE = new Set([2304, 2552, 2580, 2581, 2582, 2583, 2584, 2591, 2592, 2593])
const IN_TOOL_SPAN = new Set([2339, 2551, 2353, 2561, 2345, 2322, 2741, 2739, 2740, 2554, 2555])

/** The most diagnostics `run_code` shows a model; the rest are counted. */
export const MAX_SHOWN_DIAGNOSTICS = 5

/** How long, at most, a check may take before it is reported as timed out (and never blocks). */
export const DEFAULT_CHECK_TIMEOUT_MS = 10_000

function inSpan(spans: readonly ToolSpan[], offset: number): boolean {
  // Spans are few per program and each is checked once per diagnostic; programs are bounded.
  for (const span of spans) if (offset >= span.start && offset < span.end) return true
  return false
}

/** Whether a compiler diagnostic at `start` is one the allowlist keeps. */
export function isAllowlisted(diagnostic: RawDiagnostic, spans: readonly ToolSpan[]): boolean {
  return ANYWHERE.has(diagnostic.code) || (IN_TOOL_SPAN.has(diagnostic.code) && inSpan(spans, diagnostic.start))
}

/** Turns an engine's answer into the report's diagnostics: positioned, classified, source order, notes last. */
export function classify(program: string, result: PreflightEngineResult): PreflightDiagnostic[] {
  const lines = new LineIndex(program)
  const found = (result.diagnostics ?? []).map((d) =>
    Object.freeze({
      ...lines.position(d.start),
      code: `TS${d.code}`,
      message: d.message,
      severity: isAllowlisted(d, result.spans) ? ('error' as const) : ('warning' as const),
    }),
  )
  found.sort((a, b) => a.line - b.line || a.column - b.column)
  return [...found, ...result.notes]
}

/**
 * The diagnostics a model reads, as text: at most {@link MAX_SHOWN_DIAGNOSTICS}, each
 * with its line, the rest counted. `undefined` when none is an `error`.
 */
export function renderDiagnostics(diagnostics: readonly PreflightDiagnostic[], heading: string): string | undefined {
  const errors = diagnostics.filter((d) => d.severity === 'error')
  if (errors.length === 0) return undefined
  const shown = errors.slice(0, MAX_SHOWN_DIAGNOSTICS).map((d) => `  line ${d.line}, column ${d.column}: ${d.code} ${d.message.replaceAll('\n', '\n    ')}`)
  const more = errors.length > MAX_SHOWN_DIAGNOSTICS ? [`  (and ${errors.length - MAX_SHOWN_DIAGNOSTICS} more)`] : []
  return [`${heading} ${errors.length} problem${errors.length === 1 ? '' : 's'}:`, ...shown, ...more].join('\n')
}

/** What a {@link Preflight} needs from the registry. */
export interface PreflightOptions {
  readonly engine: PreflightEngine
  /** The tools a program of `agent` may call: their SDK block is what the program is checked against. */
  readonly tools: (agent: string | undefined) => readonly SdkToolInput[]
  /** How long a check may take before it answers a `CHECK_TIMEOUT` note (default {@link DEFAULT_CHECK_TIMEOUT_MS}). */
  readonly timeoutMs?: number
}

interface DeclarationsEntry {
  readonly tools: readonly SdkToolInput[]
  readonly names: readonly string[]
  readonly text: string
}

const UNKNOWN_MEMBER = /^Property '([^']*)' does not exist on type '\{/

/**
 * The compiler names an unknown tool by printing the whole `tools` type (cut at 160 characters: `…;
 * 997 more …`).
 */
function unknownToolMessage(diagnostic: PreflightDiagnostic, planned: ReadonlySet<string>, names: readonly string[]): PreflightDiagnostic {
  if (diagnostic.code !== 'TS2339' && diagnostic.code !== 'TS2551') return diagnostic
  const wanted = UNKNOWN_MEMBER.exec(diagnostic.message)?.[1]
  if (wanted === undefined || !planned.has(wanted) || names.includes(wanted)) return diagnostic
  const closest = closestNames(wanted, names)
  const hint = closest.length > 0 ? `; did you mean ${closest.map((n) => `tools.${n}`).join(', ')}?` : '; find tools with catalog.search(…)'
  return Object.freeze({ ...diagnostic, message: `tools.${wanted} is not a tool this program can call${hint}` })
}

function sameInputs(a: readonly SdkToolInput[], b: readonly SdkToolInput[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    if (x.name !== y.name || x.parameters !== y.parameters || x.output !== y.output || x.description !== y.description) return false
  }
  return true
}

/** The most scopes whose SDK declarations a {@link Preflight} keeps (the oldest used goes first). */
export const MAX_DECLARATION_ENTRIES = 64

/** A registry's preflight: `check(code, agent, language)` → the report. */
export class Preflight {
  readonly #options: PreflightOptions
  readonly #declarations = new Map<string | undefined, DeclarationsEntry>()

  constructor(options: PreflightOptions) {
    this.#options = options
  }

  /** The SDK declarations of what `agent` may call (and their names), rendered once per change of its tool set. */
  declarations(agent: string | undefined): DeclarationsEntry {
    const tools = this.#options.tools(agent)
    const cached = this.#declarations.get(agent)
    // Re-inserted on each use: the map's order is then least recently used first.
    this.#declarations.delete(agent)
    if (cached !== undefined && sameInputs(cached.tools, tools)) {
      this.#declarations.set(agent, cached)
      return cached
    }
    const entry = { tools, names: tools.map((t) => t.name), text: renderTypeScriptSdkBlock(tools) }
    if (this.#declarations.size >= MAX_DECLARATION_ENTRIES) this.#declarations.delete(this.#declarations.keys().next().value as string | undefined)
    this.#declarations.set(agent, entry)
    return entry
  }

  /** Checks `program` (never rejects: a failed or slow engine answers an `info` note). */
  async check(program: string, agent: string | undefined, language: string, signal?: AbortSignal): Promise<PreflightReport> {
    const started = performance.now()
    let entry: DeclarationsEntry | undefined
    try {
      entry = language === 'python' ? undefined : this.declarations(agent)
    } catch (error) {
      // A tool list that cannot be read or rendered leaves the program unchecked, never failed.
      const note = checkNote('CHECK_FAILED', `the SDK could not be rendered: ${error instanceof Error ? error.message : String(error)}`)
      return Object.freeze({ diagnostics: Object.freeze([note]), plan: Object.freeze({ calls: Object.freeze([]), dynamic: true }), ms: 0 })
    }
    const declarations = entry?.text
    const timeoutMs = this.#options.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS
    let timer: ReturnType<typeof setTimeout> | undefined
    const timedOut = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs)
    })
    let result: PreflightEngineResult | undefined
    let failure: string | undefined
    try {
      result = await Promise.race([this.#options.engine.analyze({ program, language, declarations }, signal), timedOut])
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error)
    } finally {
      clearTimeout(timer)
    }
    const ms = Math.round((performance.now() - started) * 10) / 10
    if (result === undefined) {
      const note =
        failure === undefined
          ? checkNote('CHECK_TIMEOUT', `the preflight did not finish within ${timeoutMs} ms; the program was not checked`)
          : checkNote('CHECK_FAILED', `the preflight failed: ${failure}`)
      return Object.freeze({ diagnostics: Object.freeze([note]), plan: Object.freeze({ calls: Object.freeze([]), dynamic: true }), ms })
    }
    const planned = new Set(result.plan.calls.map((c) => c.name))
    const diagnostics = classify(program, result).map((d) => (entry === undefined ? d : unknownToolMessage(d, planned, entry.names)))
    return Object.freeze({ diagnostics: Object.freeze(diagnostics), plan: result.plan, ms })
  }
}
