/**
 * Docs that show real output stay real: every sample marked `<!-- sample: name -->` in
 * docs/*.md is produced here from a real run (the `npm start` server, the library) and
 * compared with the page (test/unit/docs/samples.ts says how a sample is matched), and a
 * block the prose calls "real output" must carry such a marker. Drift fails `npm test`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startServer } from '../../../examples/start.js'
import type { StartedServer } from '../../../examples/start.js'
import { compareSample, findSamples, samplePattern, unmarkedRealOutput } from './samples.js'
import type { DocSample } from './samples.js'

const docsDir = fileURLToPath(new URL('../../../docs/', import.meta.url))
const pages = readdirSync(docsDir).filter((file) => file.endsWith('.md')).sort()
const read = (file: string): string => readFileSync(`${docsDir}${file}`, 'utf8')
const samples: DocSample[] = pages.flatMap((file) => findSamples(`docs/${file}`, read(file)))

/**
 * Pages whose "real output" is not produced here yet, with why. Remove an entry as soon
 * as its sample carries a marker and a producer below.
 */
const NOT_YET_PRODUCED: Readonly<Record<string, string>> = {
  'docs/approvals.md': 'the approvals flow is being regenerated with the approval rendering change (issue 23); its producer joins this file then',
}

const TOKEN = 'docs-sample-token-0123456789abcdef'
let server: StartedServer | undefined
const started = async (): Promise<StartedServer> => (server ??= await startServer({ port: 0, token: TOKEN, staticDir: null }))
const post = async (path: string, body: unknown, accept = 'application/json'): Promise<string> => {
  const { url } = await started()
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: accept },
    body: JSON.stringify(body),
  })
  return response.text()
}

/** The producer of each marked sample: the real output the page shows. */
const PRODUCERS: Readonly<Record<string, () => Promise<string>>> = {
  // docs/http-api.md, POST /v1/run as an event stream against `npm start`.
  'http-run-stream': () =>
    post(
      '/v1/run',
      { code: 'const files = await tools.list_files({})\nconsole.log("files:", files.total)\nreturn files.total', description: 'count the files' },
      'text/event-stream',
    ),
}

afterAll(async () => {
  await server?.shutdown()
})

describe('documentation samples', () => {
  it('every marker names a producer, once; every producer has its marker', () => {
    const names = samples.map((s) => s.name)
    expect(names.filter((name, i) => names.indexOf(name) !== i), 'a sample name used twice').toEqual([])
    expect(names.filter((name) => !(name in PRODUCERS)), 'markers without a producer in this file').toEqual([])
    expect(Object.keys(PRODUCERS).filter((name) => !names.includes(name)), 'producers whose marker is gone from docs/').toEqual([])
  })

  it('a block the prose calls "real output" carries a sample marker', () => {
    const unmarked = pages.flatMap((file) => unmarkedRealOutput(`docs/${file}`, read(file)).map((line) => `docs/${file}:${line}`))
    expect(unmarked.filter((where) => !(where.split(':')[0]! in NOT_YET_PRODUCED))).toEqual([])
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
