/**
 * Tool-owned UI presentation: provider-neutral, card-tagged render intents a tool returns from
 * `presentCall` / `presentResult`, so UIs never special-case tool names.
 * @module
 */
import type { JsonValue } from './json/json-value.js'

/** A file location a call or result refers to. */
export interface ToolLocation {
  readonly path: string
  /** 1-based line, when known. */
  readonly line?: number
}

/** One file's change. `oldText` absent means a new file. */
export interface ToolDiff {
  readonly path: string
  readonly oldText?: string
  readonly newText: string
}

/** A call rendered as a generic card. */
export interface GenericCallView {
  readonly card: 'generic'
  readonly title: string
  /** What kind of action (`read`, `edit`, `search`, `execute`, `fetch`, `other`…). */
  readonly kind?: string
  readonly rawInput?: JsonValue | string
  readonly content?: string
  readonly locations?: readonly ToolLocation[]
}

/** A call rendered as a shell command. */
export interface TerminalCallView {
  readonly card: 'terminal'
  readonly title: string
  readonly description?: string
  readonly cwd?: string
}

/** A call rendered as the diff it will apply. */
export interface DiffCallView {
  readonly card: 'diff'
  readonly title: string
  readonly diffs: readonly ToolDiff[]
  readonly locations?: readonly ToolLocation[]
}

/** How a UI renders a call. */
export type ToolCallView = GenericCallView | TerminalCallView | DiffCallView

/** A result rendered as a generic card. */
export interface GenericResultView {
  readonly card: 'generic'
  readonly title?: string
  readonly content?: string
}

/** A result rendered as terminal output. */
export interface TerminalResultView {
  readonly card: 'terminal'
  readonly title?: string
  readonly output?: string
  readonly exitCode?: number
  readonly signal?: string
}

/** A result rendered as applied diffs. */
export interface DiffResultView {
  readonly card: 'diff'
  readonly title?: string
  readonly diffs: readonly ToolDiff[]
}

/** One file's matches in a grep-shaped search result. */
export interface SearchFileMatches {
  readonly path: string
  readonly matches: readonly { readonly line: number; readonly text: string }[]
}

/**
 * A completed discovery search: grouped matches (`shape: 'matches'`, grep) or a flat path list
 * (`shape: 'paths'`, glob).
 */
export type SearchResultView =
  | {
      readonly card: 'search'
      readonly shape: 'matches'
      readonly title?: string
      readonly truncated: boolean
      readonly total: number
      readonly files: readonly SearchFileMatches[]
    }
  | {
      readonly card: 'search'
      readonly shape: 'paths'
      readonly title?: string
      readonly truncated: boolean
      readonly total: number
      readonly paths: readonly string[]
    }

/** One line of a read window, keeping its file line number. */
export interface ReadLine {
  readonly number: number
  readonly text: string
}

/** A completed file read: a line-numbered code view. */
export interface ReadResultView {
  readonly card: 'read'
  readonly title?: string
  readonly path: string
  readonly offset: number
  readonly lines: readonly ReadLine[]
  readonly totalLines: number
  readonly lang?: string
  readonly content?: string
}

/** One web search source. */
export interface WebSource {
  readonly title: string
  readonly url: string
  readonly snippet?: string
}

/** A completed web retrieval (search sources or a fetch summary). */
export type WebResultView =
  | { readonly card: 'web'; readonly kind: 'search'; readonly title?: string; readonly query: string; readonly sources: readonly WebSource[] }
  | {
      readonly card: 'web'
      readonly kind: 'fetch'
      readonly title?: string
      readonly url: string
      readonly status?: number
      readonly contentType?: string
      readonly bytes?: number
    }

/** How a UI renders a result. */
export type ToolResultView =
  | GenericResultView
  | TerminalResultView
  | DiffResultView
  | SearchResultView
  | ReadResultView
  | WebResultView
