/**
 * The result builders and checkers of the pipeline as units: what they accept, copy and
 * freeze, and the exact INVALID_JSON messages for what they refuse.
 */
import { describe, expect, it } from 'vitest'
import { CodeRunFailedError, ToolError } from '../../../src/errors.js'
import {
  failure,
  failureContent,
  failureFromError,
  snapshotContent,
  snapshotContext,
  snapshotContexts,
  success,
  withContent,
  withContexts,
} from '../../../src/registry/results.js'
import { refusalMessage } from '../../support/refusal.js'

function refusal(fn: () => unknown): string | undefined {
  return refusalMessage('INVALID_JSON', () => fn())
}

describe('snapshotContent', () => {
  it('copies text and image blocks into frozen plain blocks', () => {
    const source = [
      { type: 'text', text: 'a', extra: 1 },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
    ]
    const out = snapshotContent(source, 'content')
    expect(out).toEqual([
      { type: 'text', text: 'a' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
    ])
    expect(Object.isFrozen(out)).toBe(true)
    expect(out.every((b) => Object.isFrozen(b))).toBe(true)
    expect(out[0]).not.toBe(source[0])
    expect(snapshotContent([], 'content')).toEqual([])
  })

  it('refuses what is not a list of well-formed blocks, naming where', () => {
    expect(refusal(() => snapshotContent('text', 'render()'))).toBe('render() must be an array of content blocks')
    expect(refusal(() => snapshotContent([{ type: 'text', text: 'ok' }, null], 'c'))).toBe('c[1] must be a content block object')
    expect(refusal(() => snapshotContent(['x'], 'c'))).toBe('c[0] must be a content block object')
    expect(refusal(() => snapshotContent([{ type: 'text', text: 1 }], 'c'))).toBe('c[0].text must be a string')
    expect(refusal(() => snapshotContent([{ type: 'image', data: 'd' }], 'c'))).toBe('c[0] image blocks need string data and mimeType')
    expect(refusal(() => snapshotContent([{ type: 'image', mimeType: 'image/png' }], 'c'))).toBe('c[0] image blocks need string data and mimeType')
    expect(refusal(() => snapshotContent([{ type: 'audio' }], 'c'))).toBe("c[0].type must be 'text' or 'image'")
    expect(refusal(() => snapshotContent([{ text: 'no type' }], 'c'))).toBe("c[0].type must be 'text' or 'image'")
  })

  it('refuses accessors instead of running them', () => {
    let ran = false
    const block = { type: 'text', get text() {
      ran = true
      return 'x'
    } }
    expect(refusal(() => snapshotContent([block], 'c'))).toBe('text must be a data property')
    expect(ran).toBe(false)
    // An inherited field is not the block's own.
    expect(refusal(() => snapshotContent([Object.create({ type: 'text', text: 'x' })], 'c'))).toBe("c[0].type must be 'text' or 'image'")
  })
})

describe('snapshotContext(s)', () => {
  it('copies source, content and a lossless meta; leaves meta out when absent', () => {
    const ctx = snapshotContext({ source: 's', content: 'c', meta: { n: [1] } }, 'ctx')
    expect(ctx).toEqual({ source: 's', content: 'c', meta: { n: [1] } })
    expect(Object.isFrozen(ctx)).toBe(true)
    expect(Object.keys(snapshotContext({ source: 's', content: 'c' }, 'ctx'))).toEqual(['source', 'content'])
  })

  it('refuses malformed contexts, naming where', () => {
    expect(refusal(() => snapshotContext(null, 'ctx'))).toBe('ctx must be an object')
    expect(refusal(() => snapshotContext('x', 'ctx'))).toBe('ctx must be an object')
    expect(refusal(() => snapshotContext({ content: 'c' }, 'ctx'))).toBe('ctx.source must be a string')
    expect(refusal(() => snapshotContext({ source: 's', content: 3 }, 'ctx'))).toBe('ctx.content must be a string')
    expect(refusal(() => snapshotContexts({}, 'contexts'))).toBe('contexts must be an array')
    expect(refusal(() => snapshotContexts([{ source: 's', content: 'c' }, {}], 'contexts'))).toBe('contexts[1].source must be a string')
    expect(snapshotContexts([{ source: 'a', content: 'b' }], 'contexts')).toEqual([{ source: 'a', content: 'b' }])
  })
})

describe('failure and success', () => {
  it('a failure says exactly "Error: <message>", with its code and name, contexts only when given', () => {
    expect(failureContent('m')).toEqual([{ type: 'text', text: 'Error: m' }])
    const f = failure('DENIED', 'no', [])
    expect(f).toEqual({ isError: true, error: { message: 'no', info: { name: 'ToolError', code: 'DENIED' } }, content: [{ type: 'text', text: 'Error: no' }] })
    expect(Object.hasOwn(f, 'additionalContexts')).toBe(false)
    expect(Object.isFrozen(f) && Object.isFrozen(f.error) && Object.isFrozen(f.error.info) && Object.isFrozen(f.content)).toBe(true)
    const contexts = [{ source: 's', content: 'c' }]
    const withCtx = failure('X', 'm', contexts, 'Custom')
    expect(withCtx.error.info).toEqual({ name: 'Custom', code: 'X' })
    expect(withCtx.additionalContexts).toEqual(contexts)
    expect(withCtx.additionalContexts).not.toBe(contexts)
    expect(Object.isFrozen(withCtx.additionalContexts)).toBe(true)
  })

  it('failureFromError keeps a ToolError’s code, uses the fallback otherwise, and the name when there is no message', () => {
    expect(failureFromError(new ToolError('BLOCKED', 'nope'), 'TOOL_FAILED').error).toEqual({ message: 'nope', info: { name: 'ToolError', code: 'BLOCKED' } })
    const run = failureFromError(new CodeRunFailedError('timeout', 'slow'), 'TOOL_FAILED')
    expect(run.error.info?.code).toBe('CODE_RUN_FAILED')
    expect(failureFromError(new TypeError('bad'), 'TOOL_FAILED').error).toEqual({ message: 'bad', info: { name: 'TypeError', code: 'TOOL_FAILED' } })
    // Without contexts the failure carries none (not even an empty list).
    expect(Object.keys(failureFromError(new TypeError('bad'), 'TOOL_FAILED'))).not.toContain('additionalContexts')
    expect(failureFromError(new RangeError(''), 'TOOL_FAILED').error.message).toBe('RangeError')
    expect(failureFromError(new Error('m'), 'WRAPPER_FAILED', [], 'listener failed: ').error.message).toBe('listener failed: m')
    expect(failureFromError(new Error('m'), 'WRAPPER_FAILED', [{ source: 's', content: 'c' }]).additionalContexts).toHaveLength(1)
  })

  it('a success keeps value and content, and meta and contexts only when present', () => {
    const s = success({ a: 1 }, [{ type: 'text', text: 't' }], undefined, [])
    expect(s).toEqual({ isError: false, value: { a: 1 }, content: [{ type: 'text', text: 't' }] })
    expect(Object.keys(s)).toEqual(['isError', 'value', 'content'])
    expect(Object.isFrozen(s)).toBe(true)
    const contexts = [{ source: 's', content: 'c' }]
    const full = success(null, [], { m: true }, contexts)
    expect(full).toEqual({ isError: false, value: null, content: [], meta: { m: true }, additionalContexts: contexts })
    expect(full.additionalContexts).not.toBe(contexts)
    expect(Object.isFrozen(full.additionalContexts)).toBe(true)
    expect(success(0, [], null, []).meta).toBeNull()
  })

  it('withContexts replaces the contexts (dropping the key for none); withContent replaces the content', () => {
    const base = success(1, [{ type: 'text', text: 'a' }], undefined, [{ source: 'old', content: 'x' }])
    const replaced = withContexts(base, [{ source: 'new', content: 'y' }])
    expect(replaced).toEqual({ isError: false, value: 1, content: [{ type: 'text', text: 'a' }], additionalContexts: [{ source: 'new', content: 'y' }] })
    expect(Object.isFrozen(replaced) && Object.isFrozen(replaced.additionalContexts)).toBe(true)
    const none = withContexts(base, [])
    expect(Object.hasOwn(none, 'additionalContexts')).toBe(false)
    const content = withContent(base, [{ type: 'text', text: 'b' }])
    expect(content).toEqual({ ...base, content: [{ type: 'text', text: 'b' }] })
    expect(Object.isFrozen(content)).toBe(true)
  })
})
