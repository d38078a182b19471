import { createRandom } from '../../fixtures/large-registry.js'

/** A seeded Fisher-Yates shuffle, so "shuffled input" tests are reproducible. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const random = createRandom(seed)
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}
