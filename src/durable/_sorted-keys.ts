/**
 * Store keys kept sorted (UTF-16 code unit order, the order `DurableStore.list` pages in): the
 * binary search the memory store and the file store's cached listing page with.
 * @module
 */

/** The index of the first of `sorted` (ascending UTF-16 code unit order) that is `>= key`: `sorted.length` when none is. */
export function firstAtOrAfter(sorted: readonly string[], key: string): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (sorted[middle]! < key) low = middle + 1
    else high = middle
  }
  return low
}
