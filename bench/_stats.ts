/**
 * Shared helpers for the bench scripts: summary statistics over timing samples and a
 * plain-text table printer. Benchmarks print figures; they never assert on speed.
 *
 * @module
 */

/** Summary of a list of samples (any unit; the caller keeps track of it). */
export interface Summary {
  readonly median: number
  readonly p95: number
  readonly mean: number
  readonly n: number
}

/** Nearest-rank percentile of already sorted samples. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

/** Median, 95th percentile, mean and count of `samples` (NaN for an empty list). */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b)
  const n = sorted.length
  const mid = Math.floor(n / 2)
  const median = n === 0 ? Number.NaN : n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  const mean = n === 0 ? Number.NaN : sorted.reduce((sum, x) => sum + x, 0) / n
  return { median, p95: percentile(sorted, 95), mean, n }
}

/** One table row: column name → cell (numbers are printed with up to 3 significant decimals). */
export type TableRow = Readonly<Record<string, string | number>>

function cell(value: string | number): string {
  if (typeof value === 'string') return value
  if (!Number.isFinite(value)) return String(value)
  const abs = Math.abs(value)
  return abs >= 100 ? value.toFixed(0) : abs >= 10 ? value.toFixed(1) : abs >= 1 ? value.toFixed(2) : value.toFixed(3)
}

/** Prints rows as an aligned plain-text table (columns from the first row, in order). */
export function printTable(rows: readonly TableRow[], title?: string): void {
  if (title !== undefined) console.log(`\n${title}`)
  if (rows.length === 0) {
    console.log('(no rows)')
    return
  }
  const columns = Object.keys(rows[0]!)
  const cells = rows.map((row) => columns.map((c) => cell(row[c] ?? '')))
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)))
  const line = (parts: readonly string[]) => parts.map((p, i) => (i === 0 ? p.padEnd(widths[i]!) : p.padStart(widths[i]!))).join('  ')
  console.log(line(columns))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const r of cells) console.log(line(r))
}

/**
 * Times `fn` in `samples` batches of `iterations` calls each (after a warm-up batch)
 * and returns the per-call time of each batch in nanoseconds.
 */
export function timePerCall(fn: () => void, iterations: number, samples: number): number[] {
  for (let i = 0; i < iterations; i++) fn()
  const out: number[] = []
  for (let s = 0; s < samples; s++) {
    const start = performance.now()
    for (let i = 0; i < iterations; i++) fn()
    out.push(((performance.now() - start) * 1e6) / iterations)
  }
  return out
}

/**
 * Like {@link timePerCall} for several functions at once, alternating them batch by
 * batch so that background load drifts affect every contender alike. Returns one
 * sample list (ns per call) per function, in order.
 */
export function timePerCallInterleaved(fns: readonly (() => void)[], iterations: number, samples: number): number[][] {
  for (const fn of fns) for (let i = 0; i < iterations; i++) fn()
  const out = fns.map(() => [] as number[])
  for (let s = 0; s < samples; s++) {
    for (let f = 0; f < fns.length; f++) {
      const fn = fns[f]!
      const start = performance.now()
      for (let i = 0; i < iterations; i++) fn()
      out[f]!.push(((performance.now() - start) * 1e6) / iterations)
    }
  }
  return out
}
