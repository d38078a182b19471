/**
 * Docs that show real output stay real: every sample marked `<!-- sample: name -->` in
 * docs/*.md is produced here from a real run (the `npm start` server, the library) and
 * compared with the page (test/unit/docs/samples.ts says how a sample is matched), and a
 * block the prose calls "real output" must carry such a marker. Drift fails `npm test`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { until } from '../../support/poll.js'
import { startServer } from '../../../examples/start.js'
import type { StartedServer } from '../../../examples/start.js'
import { compareSample, findSamples, samplePattern, unmarkedRealOutput } from './samples.js'
import type { DocSample } from './samples.js'

const docsDir = fileURLToPath(new URL('../../../docs/', import.meta.url))
const pages = readdirSync(docsDir).filter((file) => file.endsWith('.md')).sort()
const read = (file: string): string => readFileSync(`${docsDir}${file}`, 'utf8')
const samples: DocSample[] = pages.flatMap((file) => findSamples(`docs/${file}`, read(file)))

/**
 * Producers whose marker is not in the page yet, with the page: that page's "real output"
 * is not checked until the markers are there. Remove an entry once its marker is in
 * place (the first test below says when). Empty: every producer's marker is in place.
 */
const AWAITING_MARKER: Readonly<Record<string, string>> = {}

const TOKEN = 'docs-sample-token-0123456789abcdef'
// One fresh `npm start` server per sample, each with its own data directory as `npm start`
// has (approval ids are then `<32 hex>.<uuid>`, as a newcomer sees them): one sample's run
// (a written file) never shows in another's output.
const servers = new Map<string, Promise<StartedServer>>()
const dataDirs: string[] = []
const started = (sample: string): Promise<StartedServer> => {
  let server = servers.get(sample)
  if (server === undefined) {
    const dataDir = mkdtempSync(join(tmpdir(), 'doc-samples-'))
    dataDirs.push(dataDir)
    servers.set(sample, (server = startServer({ port: 0, token: TOKEN, staticDir: null, dataDir })))
  }
  return server
}
const post = async (sample: string, path: string, body: unknown, accept = 'application/json'): Promise<string> => {
  const { url } = await started(sample)
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: accept },
    body: JSON.stringify(body),
  })
  return response.text()
}

/** Reads an event stream frame by frame (`event:`/`id:`/`data:` lines, a blank line between frames). */
function frames(body: ReadableStream<Uint8Array>): { next(): Promise<string | undefined> } {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  return {
    async next() {
      for (;;) {
        const end = buffered.indexOf('\n\n')
        if (end >= 0) {
          const frame = buffered.slice(0, end)
          buffered = buffered.slice(end + 2)
          if (frame.startsWith(':')) continue
          return frame
        }
        const chunk = await reader.read()
        if (chunk.done) {
          const rest = buffered
          buffered = ''
          return rest.trim() === '' ? undefined : rest
        }
        buffered += decoder.decode(chunk.value, { stream: true })
      }
    },
  }
}

/**
 * docs/approvals.md's flow against `npm start`: a run whose write waits for a person, the
 * other terminal's calls (list, a bad decision, allow, a second decision, an unknown id),
 * and the rest of the stream. One run yields the three blocks.
 */
let approvalsFlow: Promise<readonly [string, string, string]> | undefined
const APPROVALS_RUN = {
  code: 'const files = await tools.list_files({})\nconst written = await tools.write_file({ path: "notes/todo.md", content: "- ship it\\n" })\nreturn { files: files.total, written }',
  description: 'write a note',
}
async function runApprovalsFlow(): Promise<readonly [string, string, string]> {
  const { url } = await started('approvals-flow')
  const auth = { Authorization: `Bearer ${TOKEN}` }
  const json = { ...auth, 'Content-Type': 'application/json' }
  const response = await fetch(`${url}/v1/run`, { method: 'POST', headers: { ...json, Accept: 'text/event-stream' }, body: JSON.stringify(APPROVALS_RUN) })
  const stream = frames(response.body!)
  const first: string[] = []
  for (let frame = await stream.next(); frame !== undefined; frame = await stream.next()) {
    first.push(frame)
    if (frame.startsWith('event: approval\n')) break
  }
  const id = (JSON.parse(first.at(-1)!.split('\ndata: ')[1]!) as { id: string }).id
  const curlPost = (body: string, target: string) =>
    `$ curl -s -i -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\\n    -d '${body}' http://127.0.0.1:8787/v1/approvals/${target}`
  const post = async (body: string, target: string) => {
    const answer = await fetch(`${url}/v1/approvals/${target}`, { method: 'POST', headers: json, body })
    return `${curlPost(body, target)}\nHTTP/1.1 ${answer.status} ${answer.statusText}\n${await answer.text()}`
  }
  const meanwhile = [
    `$ curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8787/v1/approvals\n${await (await fetch(`${url}/v1/approvals`, { headers: auth })).text()}`,
    await post('{"decision":"yes"}', id),
    await post('{"decision":"allow","reason":"fine by me"}', id),
    await post('{"decision":"deny"}', id),
    await post('{"decision":"allow"}', 'no-such-id'),
  ]
  const rest: string[] = []
  for (let frame = await stream.next(); frame !== undefined; frame = await stream.next()) rest.push(frame)
  const command = [
    `$ curl -sN -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Accept: text/event-stream' \\`,
    `    -d '${JSON.stringify(APPROVALS_RUN)}' \\`,
    '    http://127.0.0.1:8787/v1/run',
  ].join('\n')
  return [`${command}\n${first.join('\n\n')}`, meanwhile.join('\n\n'), rest.join('\n\n')]
}
const approvalsBlock = async (index: 0 | 1 | 2): Promise<string> => (await (approvalsFlow ??= runApprovalsFlow()))[index]

/**
 * docs/http-api.md, "Runs as resources", against `npm start`: a background run whose write
 * waits for a person, its status while it waits and once done, and a reconnect with
 * Last-Event-ID. One run yields the block; the polls in between are not shown.
 */
async function runsFlow(): Promise<string> {
  const { url } = await started('http-runs-flow')
  const auth = { Authorization: `Bearer ${TOKEN}` }
  const body = JSON.stringify(APPROVALS_RUN)
  const shown: string[] = []
  const created = await fetch(`${url}/v1/runs`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body })
  const { id } = (await created.clone().json()) as { id: string }
  shown.push(
    `$ curl -s -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\\n    -d '${body}' http://127.0.0.1:8787/v1/runs\n${await created.text()}`,
  )
  const get = async (): Promise<{ text: string; status: string }> => {
    const text = await (await fetch(`${url}/v1/runs/${id}`, { headers: auth })).text()
    return { text, status: (JSON.parse(text) as { status: string }).status }
  }
  const whenStatus = (status: string): Promise<string> =>
    until(async () => {
      const answer = await get()
      return answer.status === status ? `$ curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8787/v1/runs/${id}\n${answer.text}` : undefined
    }, `the run to be ${status}`, 20_000, 10)
  const waiting = await whenStatus('waiting')
  shown.push(waiting)
  const approval = (JSON.parse(waiting.slice(waiting.indexOf('\n') + 1)) as { approvals: { id: string }[] }).approvals[0]!.id
  const decided = await fetch(`${url}/v1/approvals/${approval}`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: '{"decision":"allow"}' })
  shown.push(
    `$ curl -s -o /dev/null -w '%{http_code}\\n' -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\\n    -d '{"decision":"allow"}' http://127.0.0.1:8787/v1/approvals/${approval}\n${decided.status}`,
  )
  shown.push(await whenStatus('done'))
  const events = await fetch(`${url}/v1/runs/${id}/events`, { headers: { ...auth, 'Last-Event-ID': '5' } })
  shown.push(`$ curl -sN -H "Authorization: Bearer $TOKEN" -H 'Last-Event-ID: 5' http://127.0.0.1:8787/v1/runs/${id}/events\n${(await events.text()).trimEnd()}`)
  return shown.join('\n\n')
}

/** The producer of each marked sample: the real output the page shows. */
const PRODUCERS: Readonly<Record<string, () => Promise<string>>> = {
  // docs/http-api.md, POST /v1/run as an event stream against `npm start`.
  'http-run-stream': () =>
    post(
      'http-run-stream',
      '/v1/run',
      { code: 'const files = await tools.list_files({})\nconsole.log("files:", files.total)\nreturn files.total', description: 'count the files' },
      'text/event-stream',
    ),
  // docs/approvals.md, "The flow against npm start": the stream until the write asks, the
  // other terminal, the rest of the stream.
  'approvals-flow-stream': () => approvalsBlock(0),
  'approvals-flow-meanwhile': () => approvalsBlock(1),
  'approvals-flow-stream-end': () => approvalsBlock(2),
  // docs/http-api.md, "Runs as resources": the same write as a background run.
  'http-runs-flow': runsFlow,
}

afterAll(async () => {
  await Promise.all([...servers.values()].map(async (server) => (await server).shutdown()))
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

describe('documentation samples', () => {
  it('every marker names a producer, once; every producer has its marker', () => {
    const names = samples.map((s) => s.name)
    expect(names.filter((name, i) => names.indexOf(name) !== i), 'a sample name used twice').toEqual([])
    expect(names.filter((name) => !(name in PRODUCERS)), 'markers without a producer in this file').toEqual([])
    expect(Object.keys(PRODUCERS).filter((name) => !names.includes(name) && !(name in AWAITING_MARKER)), 'producers whose marker is gone from docs/').toEqual([])
    expect(Object.keys(AWAITING_MARKER).filter((name) => names.includes(name)), 'markers now in place: remove them from AWAITING_MARKER').toEqual([])
  })

  it('a block the prose calls "real output" carries a sample marker', () => {
    const unmarked = pages.flatMap((file) => unmarkedRealOutput(`docs/${file}`, read(file)).map((line) => `docs/${file}:${line}`))
    const waiting = new Set(Object.values(AWAITING_MARKER))
    expect(unmarked.filter((where) => !waiting.has(where.split(':')[0]!))).toEqual([])
  })

  it.each(samples.map((s) => [s.name, s] as const))('%s matches a real run', async (_name, sample) => {
    const actual = await PRODUCERS[sample.name]!()
    const verdict = compareSample(sample.text, actual)
    expect(verdict.ok ? 'matches' : `${sample.file}:${sample.line} "${sample.name}": ${verdict.why}`).toBe('matches')
  })
})

describe('how a sample is matched', () => {
  it('literal text, … for any text within a line, a UUID for any UUID (the same one where repeated)', () => {
    const a = '11111111-2222-4333-8444-555555555555'
    const b = '66666666-7777-4888-9999-aaaaaaaaaaaa'
    expect(samplePattern('{"n":1,"at":…}').test('{"n":1,"at":1796106120820}')).toBe(true)
    expect(samplePattern('{"n":1,"at":…}').test('{"n":2,"at":1796106120820}')).toBe(false)
    expect(samplePattern('x…\ny').test('xabc\ny')).toBe(true)
    expect(samplePattern('x…y').test('xa\nby')).toBe(false)
    expect(samplePattern(`id ${a} again ${a}`).test(`id ${b} again ${b}`)).toBe(true)
    expect(samplePattern(`id ${a} again ${a}`).test(`id ${b} again ${a}`)).toBe(false)
    expect(samplePattern(`id ${a} other ${b}`).test(`id ${a} other ${a}`)).toBe(false)
    expect(samplePattern('a.b(c)[d]*').test('a.b(c)[d]*')).toBe(true)
    expect(samplePattern('a.b').test('axb')).toBe(false)
    // An approval id under a store: a digest, then a UUID; each bound like a UUID.
    const d = '9a0c037bd763e737141554960e2ef409'
    const e = 'cc7a92fcd4968cceae3d4fc0147b4974'
    expect(samplePattern(`"id":"${d}.${a}" ${d}`).test(`"id":"${e}.${b}" ${e}`)).toBe(false) // a digest before no dot is literal
    expect(samplePattern(`"id":"${d}.${a}" /${d}.${a}`).test(`"id":"${e}.${b}" /${e}.${b}`)).toBe(true)
    expect(samplePattern(`"id":"${d}.${a}" /${d}.${a}`).test(`"id":"${e}.${b}" /${d}.${b}`)).toBe(false)
    expect(samplePattern(`"id":"${d}.${a}"`).test(`"id":"${a}"`)).toBe(false)
  })

  it('an abbreviated UUID stands for as many hex digits; timestamps and measurements for any, whole-second gaps kept', () => {
    expect(samplePattern('"callId":"http-run-4a23…:code:2"').test('"callId":"http-run-9f0e1d2c-aaaa-4bbb-8ccc-dddddddddddd:code:2"')).toBe(true)
    expect(samplePattern('"id":"4ca5be31-…"').test('"id":"0b1c2d3e-1111-4222-8333-444444444444"')).toBe(true)
    expect(samplePattern('"id":"4ca5be31-…"').test('"id":"not-hex!"')).toBe(false)
    expect(samplePattern('"durationMs":3045.510262}').test('"durationMs":0.4}')).toBe(true)
    expect(samplePattern('"durationMs":3045.510262}').test('"durationMs":"x"}')).toBe(false)
    expect(samplePattern('"bytes":10}').test('"bytes":11}')).toBe(false)
    const line = '{"requestedAt":1796152254878,"expiresAt":1796152554878}'
    expect(compareSample(line, '{"requestedAt":1800000000000,"expiresAt":1800000300000}')).toEqual({ ok: true })
    // The drift issue 23 found: a 30 s expiry where the server gives 300 s.
    expect(compareSample(line, '{"requestedAt":1800000000000,"expiresAt":1800000030000}').ok).toBe(false)
    // A measured gap (not whole seconds) is free.
    expect(compareSample('{"startedAt":1796152254862,"requestedAt":1796152254878}', '{"startedAt":1800000000000,"requestedAt":1800000000003}')).toEqual({ ok: true })
  })

  it('names the first line that differs', () => {
    const verdict = compareSample('event: start\ndata: {"n":1}', 'event: start\ndata: {"n":2}\n')
    expect(verdict).toEqual({ ok: false, why: 'line 2 of the sample differs from the real output:\n  sample: data: {"n":1}\n  real:   data: {"n":2}' })
    expect(compareSample('a  \nb\n\n', 'a\nb')).toEqual({ ok: true })
  })

  it('finds markers, refuses one without a block, and spots unmarked "real output"', () => {
    const page = ['Intro.', '', '<!-- sample: one -->', '```', 'x', '```', '', 'The flow (real output):', '', '```', 'y', '```'].join('\n')
    expect(findSamples('p.md', page)).toEqual([{ name: 'one', file: 'p.md', line: 3, text: 'x' }])
    expect(unmarkedRealOutput('p.md', page)).toEqual([10])
    expect(() => findSamples('p.md', '<!-- sample: lost -->\ntext')).toThrow(/must be followed by a fenced block/)
  })
})
