/**
 * Sub-call cards rendered from the tools' own presenters (`presentCall` /
 * `presentResult`): read, diff, search, terminal, web and generic views. The page never
 * special-cases a tool name; a tool without presenters gets the generic card.
 *
 * @module
 */
import type { JsonValue } from '../../src/json/json-value.js'
import type { ToolCallView, ToolResultView } from '../../src/presentation.js'
import type { AnyToolDefinition, ContentBlock, ToolResultRecord } from '../../src/types.js'
import type { ApprovalState } from './approval-card.js'
import { h, showJson } from './dom.js'

/** One sub-call as the page tracks it (from the session-log events). */
export interface SubCallRecord {
  readonly subCallId: string
  readonly name: string
  readonly arguments: JsonValue
  /** ms since the run started. */
  readonly start: number
  /** ms since the run started; absent while running. */
  end?: number
  isError?: boolean
  content?: readonly ContentBlock[]
  error?: { readonly message: string; readonly code?: string }
  /** How the registry scheduled it. */
  readonly mode: 'parallel' | 'exclusive'
  /** Its approval, when it asked a person. */
  approval?: ApprovalState
}

function callView(definition: AnyToolDefinition | undefined, args: JsonValue): ToolCallView | undefined {
  if (definition?.presentCall === undefined) return undefined
  try {
    const typed = definition.softValidateArgs === undefined ? args : definition.softValidateArgs(args)
    return definition.presentCall(typed, args)
  } catch {
    return undefined
  }
}

function resultView(definition: AnyToolDefinition | undefined, record: SubCallRecord): ToolResultView | undefined {
  if (definition?.presentResult === undefined || record.end === undefined) return undefined
  const durable: ToolResultRecord = {
    isError: record.isError === true,
    content: record.content ?? [],
    ...(record.error === undefined
      ? {}
      : { error: { message: record.error.message, ...(record.error.code === undefined ? {} : { info: { name: 'ToolError', code: record.error.code } }) } }),
  }
  try {
    const typed = definition.softValidateArgs === undefined ? record.arguments : definition.softValidateArgs(record.arguments)
    return definition.presentResult(typed, durable, record.arguments)
  } catch {
    return undefined
  }
}

function contentText(content: readonly ContentBlock[] | undefined): string {
  return (content ?? []).map((block) => (block.type === 'text' ? block.text : `[image ${block.mimeType}]`)).join('\n')
}

function renderCallBody(view: ToolCallView | undefined, args: JsonValue): HTMLElement {
  if (view === undefined) return h('pre', {}, showJson(args))
  switch (view.card) {
    case 'terminal':
      return h('pre', { class: 'terminal' }, `${view.cwd === undefined ? '' : `${view.cwd} `}$ ${view.title}`)
    case 'diff':
      return h('div', { class: 'diff' }, view.diffs.map((d) => renderDiff(d.path, d.oldText, d.newText)))
    default:
      return h(
        'div',
        {},
        view.content === undefined ? h('pre', {}, showJson(view.rawInput ?? args)) : h('pre', {}, view.content),
        (view.locations ?? []).map((l) => h('div', { class: 'empty' }, `${l.path}${l.line === undefined ? '' : `:${l.line}`}`)),
      )
  }
}

function renderDiff(path: string, oldText: string | undefined, newText: string): HTMLElement {
  const before = oldText === undefined ? [] : oldText.split('\n')
  const after = newText.split('\n')
  const lines: HTMLElement[] = []
  // A simple line diff (common prefix/suffix), enough to show what changed.
  let head = 0
  while (head < before.length && head < after.length && before[head] === after[head]) head++
  let tail = 0
  while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++
  for (let i = Math.max(0, head - 2); i < head; i++) lines.push(h('span', {}, `  ${before[i]}\n`))
  for (let i = head; i < before.length - tail; i++) lines.push(h('span', { class: 'del' }, `- ${before[i]}\n`))
  for (let i = head; i < after.length - tail; i++) lines.push(h('span', { class: 'add' }, `+ ${after[i]}\n`))
  for (let i = after.length - tail; i < Math.min(after.length, after.length - tail + 2); i++) lines.push(h('span', {}, `  ${after[i]}\n`))
  // Without oldText a presenter shows only the text to be written (write_file's call view cannot
  // know whether the file exists): never claim "new file" — an overwrite must not read as a creation.
  return h('div', {}, h('div', { class: 'empty' }, oldText === undefined ? `${path} (the whole new content)` : path), h('pre', {}, lines))
}

function renderResultBody(view: ToolResultView | undefined, record: SubCallRecord): HTMLElement {
  if (record.isError === true) {
    return h('pre', { class: 'err' }, `${record.error?.code === undefined ? '' : `[${record.error.code}] `}${record.error?.message ?? contentText(record.content)}`)
  }
  if (view === undefined) return h('pre', {}, contentText(record.content) || '(no content)')
  switch (view.card) {
    case 'read':
      return h(
        'div',
        { class: 'readview' },
        h('div', { class: 'empty' }, `${view.path} · lines ${view.offset}–${view.offset + Math.max(0, view.lines.length - 1)} of ${view.totalLines}`),
        h('pre', {}, view.lines.map((line) => h('span', {}, h('span', { class: 'ln' }, line.number), `${line.text}\n`))),
      )
    case 'terminal':
      return h(
        'div',
        {},
        h('pre', { class: 'terminal' }, view.output ?? ''),
        view.exitCode === undefined ? null : h('div', { class: 'empty' }, `exit code ${view.exitCode}${view.signal === undefined ? '' : ` (${view.signal})`}`),
      )
    case 'diff':
      return h('div', { class: 'diff' }, view.diffs.map((d) => renderDiff(d.path, d.oldText, d.newText)))
    case 'search':
      return h(
        'div',
        { class: 'match' },
        h('div', { class: 'empty' }, `${view.total} ${view.shape === 'paths' ? 'paths' : 'matches'}${view.truncated ? ' (truncated)' : ''}`),
        view.shape === 'paths'
          ? h('pre', {}, view.paths.join('\n'))
          : view.files.map((file) =>
              h('div', {}, h('div', { class: 'path' }, file.path), h('pre', {}, file.matches.map((m) => h('span', {}, h('span', { class: 'ln' }, m.line), `${m.text}\n`)))),
            ),
      )
    case 'web':
      return view.kind === 'search'
        ? h('div', {}, h('div', { class: 'empty' }, `“${view.query}”`), view.sources.map((s) => h('div', {}, h('strong', {}, s.title), ' ', h('span', { class: 'empty' }, s.url))))
        : h('div', { class: 'empty' }, `${view.url} → ${view.status ?? '?'} ${view.contentType ?? ''} ${view.bytes ?? ''}`)
    default:
      return h('pre', {}, view.content ?? (contentText(record.content) || '(no content)'))
  }
}

/** Whether an error code says no was said (by a person, a policy or a timeout), not that a tool failed. */
export function isDenialCode(code: string | undefined): boolean {
  return code === 'DENIED_BY_APPROVAL' || code === 'DENIED_BY_GATE' || code === 'DENIED_BY_GUARD'
}

/** A failed sub-call that is a denial (a person, a policy or a timeout said no), not a tool that failed. */
export function isDenial(record: SubCallRecord): boolean {
  if (isDenialCode(record.error?.code)) return true
  const state = record.approval?.state
  return state === 'deny' || state === 'expired'
}

/**
 * Renders one sub-call's card: a one-line header (always visible) and, when opened, the
 * call's arguments and the result view. Running calls show the call view instead.
 */
export function renderCard(record: SubCallRecord, definition: AnyToolDefinition | undefined, open = false): HTMLDetailsElement {
  const call = callView(definition, record.arguments)
  const result = resultView(definition, record)
  const title = call?.title ?? record.name
  const waiting = record.end === undefined && record.approval?.state === 'pending'
  const denied = record.isError === true && isDenial(record)
  // A call whose arguments do not validate is never scheduled: it has no concurrency class to show.
  const invalid = record.error?.code === 'INVALID_ARGS' || (definition?.softValidateArgs !== undefined && definition.softValidateArgs(record.arguments) === undefined)
  const state = waiting
    ? 'awaiting approval'
    : record.end === undefined
      ? 'running…'
      : record.isError === true
        ? denied
          ? 'denied'
          : 'failed'
        : `${(record.end - record.start).toFixed(0)} ms`
  const body =
    record.end === undefined
      ? renderCallBody(call, record.arguments)
      : h(
          'div',
          {},
          // A settled call: its arguments compactly, then what the tool's result presenter draws.
          result === undefined ? renderCallBody(call, record.arguments) : h('pre', { class: 'args' }, compactJson(record.arguments)),
          renderResultBody(result, record),
        )
  return h(
    'details',
    { class: `card${record.isError === true ? ' failed' : ''}${denied ? ' denied' : ''}`, 'data-testid': 'card', 'data-state': state, 'data-card': result?.card ?? call?.card ?? 'generic', open },
    h(
      'summary',
      {},
      h('span', { class: 'title' }, title),
      h('span', { class: `badge ${invalid ? 'invalid' : record.mode}`, 'data-testid': 'card-mode' }, invalid ? 'invalid arguments' : record.mode),
      h('span', { class: 'badge' }, (result ?? call)?.card ?? 'generic'),
      h('span', { class: 'empty' }, state),
      h('span', { class: 'id' }, record.subCallId),
    ),
    h('div', { class: 'body' }, body),
  )
}

function compactJson(value: JsonValue): string {
  const text = JSON.stringify(value)
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}

/** Renders a native call's result the same way (one card). */
export function renderNativeCard(
  name: string,
  args: JsonValue,
  outcome: { readonly isError: boolean; readonly content: readonly ContentBlock[]; readonly error?: { readonly message: string; readonly info?: { readonly code: string } } },
  definition: AnyToolDefinition | undefined,
  elapsedMs: number,
  mode: 'parallel' | 'exclusive',
): HTMLDetailsElement {
  return renderCard(
    {
      subCallId: 'native',
      name,
      arguments: args,
      start: 0,
      end: elapsedMs,
      isError: outcome.isError,
      content: outcome.content,
      ...(outcome.error === undefined ? {} : { error: { message: outcome.error.message, ...(outcome.error.info === undefined ? {} : { code: outcome.error.info.code }) } }),
      mode,
    },
    definition,
    true,
  )
}
