/**
 * Documentation samples that must match real output (test/unit/docs/doc-samples.test.ts).
 *
 * A sample is marked in markdown by an HTML comment on the line before its fenced block:
 *
 *     <!-- sample: http-run-stream -->
 *     ```
 *     event: start
 *     …
 *     ```
 *
 * The block is a pattern for the real output: every character is literal except
 * - `…`, which stands for any text within one line (elide long or volatile values with it:
 *   `"startedAt":…`, `"content":[…]`);
 * - a UUID (`b3defd48-4785-41a3-b6e3-da9213663495`), which stands for any UUID: the same
 *   UUID written twice in a block must be the same UUID in the output, two different
 *   ones different UUIDs; an abbreviated one (`http-run-4a23…`, `4ca5be31-…`: hex digits
 *   right before a `…`) stands for as many hex digits;
 * - a 32-hex-digit digest before a `.` (an approval id under a store is
 *   `<32 hex>.<uuid>`), which stands for any such digest, bound like a UUID;
 * - a JSON value that is a timestamp (13 digits, epoch ms) or a measurement (a number
 *   with a fraction, like `"durationMs":3045.51`), which stands for any such number; but
 *   two timestamps on one line that differ by whole seconds (`requestedAt` and
 *   `expiresAt`: a configured timeout) must differ by exactly as much in the output.
 * Everything else, other numbers included, must match exactly.
 *
 * @module
 */

/** One marked sample found in a markdown file. */
export interface DocSample {
  readonly name: string
  readonly file: string
  /** 1-based line of the marker. */
  readonly line: number
  readonly text: string
}

const MARKER = /^<!--\s*sample:\s*([a-z0-9][a-z0-9-]*)\s*-->\s*$/
const FENCE = /^(`{3,}|~{3,})/
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/** The marked samples of one markdown text. A marker not followed by a fenced block is reported as an error. */
export function findSamples(file: string, markdown: string): DocSample[] {
  const lines = markdown.split('\n')
  const samples: DocSample[] = []
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i]!.trim())
    if (marker === null) continue
    const open = FENCE.exec(lines[i + 1] ?? '')
    if (open === null) throw new Error(`${file}:${i + 1}: the sample marker "${marker[1]}" must be followed by a fenced block on the next line`)
    const body: string[] = []
    let j = i + 2
    for (; j < lines.length && !lines[j]!.startsWith(open[1]!); j++) body.push(lines[j]!)
    if (j === lines.length) throw new Error(`${file}:${i + 1}: the sample "${marker[1]}" has no closing fence`)
    samples.push({ name: marker[1]!, file, line: i + 1, text: body.join('\n') })
    i = j
  }
  return samples
}

/**
 * The fenced blocks a page calls real output (the words "real output" in the prose just
 * before the block) that carry no sample marker: each must be marked and produced.
 */
export function unmarkedRealOutput(file: string, markdown: string): number[] {
  const lines = markdown.split('\n')
  const unmarked: number[] = []
  let inFence: string | undefined
  for (let i = 0; i < lines.length; i++) {
    const fence = FENCE.exec(lines[i]!)
    if (inFence !== undefined) {
      if (fence !== null && lines[i]!.startsWith(inFence)) inFence = undefined
      continue
    }
    if (fence === null) continue
    inFence = fence[1]
    if (MARKER.test((lines[i - 1] ?? '').trim())) continue
    // The prose right before the block: back to the previous blank line or block.
    let k = i - 1
    while (k >= 0 && lines[k]!.trim() === '') k--
    const prose: string[] = []
    for (; k >= 0 && lines[k]!.trim() !== '' && FENCE.exec(lines[k]!) === null; k--) prose.unshift(lines[k]!)
    if (/real output/i.test(prose.join(' '))) unmarked.push(i + 1)
  }
  return unmarked
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** What the sample's special tokens are, in the order they are tried. */
const TOKENS = new RegExp(
  [
    '(?<digest>(?<![0-9A-Za-z])[0-9a-f]{32}(?=\\.))',
    '(?<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})',
    '(?<short>(?<![0-9A-Za-z])[0-9a-f][0-9a-f-]{3,35}…)',
    '(?<=:)(?<time>\\d{13})(?![\\d.])',
    '(?<=:)(?<measure>-?\\d+\\.\\d+)',
    '(?<any>…)',
  ].join('|'),
  'g',
)

/** The regular expression a sample stands for, and the whole-second gaps between timestamps it must keep. */
interface SamplePattern {
  readonly regex: RegExp
  /** Pairs of timestamp group names whose difference (in ms) the output must keep. */
  readonly gaps: ReadonlyArray<readonly [string, string, number]>
}

function buildPattern(sample: string): SamplePattern {
  const uuids = new Map<string, number>()
  const digests = new Map<string, number>()
  const gaps: Array<[string, string, number]> = []
  let times = 0
  let lineTimes: Array<[string, number]> = []
  let source = ''
  let last = 0
  const literal = (text: string) => {
    // A new line: timestamps of the previous one no longer pair up.
    if (text.includes('\n')) lineTimes = []
    return escape(text)
  }
  for (const match of sample.matchAll(TOKENS)) {
    source += literal(sample.slice(last, match.index))
    const g = match.groups!
    if (g.digest !== undefined) {
      const seen = digests.get(g.digest)
      if (seen !== undefined) source += `\\k<d${seen}>`
      else {
        const n = digests.size
        digests.set(g.digest, n)
        const others = [...Array(n).keys()].map((k) => `(?!\\k<d${k}>)`).join('')
        source += `${others}(?<d${n}>[0-9a-f]{32})`
      }
    } else if (g.uuid !== undefined) {
      const seen = uuids.get(g.uuid)
      if (seen !== undefined) source += `\\k<u${seen}>`
      else {
        const n = uuids.size
        uuids.set(g.uuid, n)
        // A new UUID in the sample: any UUID not already bound to another one.
        const others = [...Array(n).keys()].map((k) => `(?!\\k<u${k}>)`).join('')
        source += `${others}(?<u${n}>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`
      }
    } else if (g.short !== undefined) {
      source += [...g.short.slice(0, -1)].map((ch) => (ch === '-' ? '-' : '[0-9a-f]')).join('') + '[^\\n]*?'
    } else if (g.time !== undefined) {
      const name = `t${times++}`
      for (const [other, value] of lineTimes) {
        const gap = Number(g.time) - value
        if (gap !== 0 && gap % 1_000 === 0) gaps.push([other, name, gap])
      }
      lineTimes.push([name, Number(g.time)])
      source += `(?<${name}>\\d{13})`
    } else if (g.measure !== undefined) {
      source += '-?\\d+(?:\\.\\d+)?'
    } else {
      source += '[^\\n]*?'
    }
    last = match.index + match[0].length
  }
  source += literal(sample.slice(last))
  return { regex: new RegExp(`^${source}$`), gaps }
}

/** The regular expression a sample stands for (see the module comment). */
export function samplePattern(sample: string): RegExp {
  return buildPattern(sample).regex
}

/** Whether `actual` matches `sample` as a whole, whole-second gaps between timestamps included. */
function matches(sample: string, actual: string): boolean {
  const { regex, gaps } = buildPattern(sample)
  const found = regex.exec(actual)
  if (found === null) return false
  return gaps.every(([a, b, gap]) => Number(found.groups![b]) - Number(found.groups![a]) === gap)
}

/** Trailing blanks of lines and of the whole text do not count. */
export function normalizeOutput(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/\s+$/, ''))
    .join('\n')
    .replace(/\n+$/, '')
}

/**
 * Whether `actual` matches the sample; when it does not, the first line that differs
 * (line-by-line comparison of the sample's lines as patterns), for the failure message.
 */
export function compareSample(sample: string, actual: string): { readonly ok: true } | { readonly ok: false; readonly why: string } {
  const want = normalizeOutput(sample)
  const got = normalizeOutput(actual)
  if (matches(want, got)) return { ok: true }
  const wantLines = want.split('\n')
  const gotLines = got.split('\n')
  for (let i = 0; i < Math.max(wantLines.length, gotLines.length); i++) {
    const w = wantLines[i]
    const g = gotLines[i]
    if (w === undefined || g === undefined || !matches(w, g)) {
      return { ok: false, why: `line ${i + 1} of the sample differs from the real output:\n  sample: ${w ?? '(nothing)'}\n  real:   ${g ?? '(nothing)'}` }
    }
  }
  return { ok: false, why: 'every line matches on its own, but not together: one UUID of the sample stands for different UUIDs in the real output (or two for one)' }
}
