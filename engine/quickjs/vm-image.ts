/**
 * Memory images of a booted QuickJS sandbox: the non-zero 4 KiB chunks of its wasm memory,
 * copied into a fresh instance instead of booting again (docs/runtimes.md).
 *
 * @module
 */

/** A wasm page: the unit memories grow by. */
const PAGE_BYTES = 65_536
/** Granularity of the image: chunks of memory either copied whole or known to be zero. */
const CHUNK_BYTES = 4_096
const CHUNK_WORDS = CHUNK_BYTES / 4

/** How many {@link CHUNK_BYTES} chunks `memory` has now (memories are whole pages, so whole chunks). */
export function chunkCount(memory: WebAssembly.Memory): number {
  return memory.buffer.byteLength / CHUNK_BYTES
}

/**
 * Flags in `flags` which chunks of `memory` from `from` up to `to` (exclusive) hold a
 * non-zero byte (1) or not (0). The words of a chunk are OR-ed eight at a time, without a
 * branch per word (measured ~2× a word-by-word loop with an early exit, on memory that is
 * mostly zeros). A range, so that a scan can be cut into steps: the first read of a page
 * costs more than scanning it (~14 µs a 4 KiB page here, ~57 ms for 16 MiB never touched).
 */
export function flagNonZeroChunks(memory: WebAssembly.Memory, flags: Uint8Array, from: number, to: number): void {
  const words = new Int32Array(memory.buffer)
  for (let chunk = from; chunk < to; chunk++) {
    let any = 0
    for (let i = chunk * CHUNK_WORDS, end = i + CHUNK_WORDS; i < end; i += 8) {
      any |= words[i]! | words[i + 1]! | words[i + 2]! | words[i + 3]! | words[i + 4]! | words[i + 5]! | words[i + 6]! | words[i + 7]!
    }
    flags[chunk] = any === 0 ? 0 : 1
  }
}

/** Which {@link CHUNK_BYTES} chunks of `memory` hold a non-zero byte (one flag per chunk), over the whole memory at once. */
export function nonZeroChunks(memory: WebAssembly.Memory): Uint8Array {
  const flags = new Uint8Array(chunkCount(memory))
  flagNonZeroChunks(memory, flags, 0, flags.length)
  return flags
}

/** The bytes of a booted VM's memory that a fresh instance lacks, as runs of chunks. */
export interface MemoryImage {
  /** The memory's size in pages when the image was taken: a restored memory starts at this size. */
  readonly pages: number
  /** `[offset, length]` pairs, in bytes, of the runs copied (ascending, disjoint). */
  readonly runs: Int32Array
  /** The runs' bytes, back to back. */
  readonly bytes: Uint8Array
}

/**
 * Takes the image of `memory` (a booted VM, at rest: no call into the wasm on the
 * stack). `fresh` is {@link nonZeroChunks} of a fresh instance right after its
 * constructors, before anything else ran in it: chunks that are zero in the booted VM
 * but not in a fresh instance are copied too, so that a restored memory equals the
 * booted one byte for byte.
 */
export function takeMemoryImage(memory: WebAssembly.Memory, fresh: Uint8Array): MemoryImage {
  const booted = nonZeroChunks(memory)
  const heap = new Uint8Array(memory.buffer)
  const runs: number[] = []
  let total = 0
  for (let chunk = 0; chunk < booted.length; ) {
    if (booted[chunk] === 0 && fresh[chunk] !== 1) {
      chunk++
      continue
    }
    const start = chunk
    while (chunk < booted.length && (booted[chunk] === 1 || fresh[chunk] === 1)) chunk++
    const offset = start * CHUNK_BYTES
    const length = Math.min(heap.length, chunk * CHUNK_BYTES) - offset
    runs.push(offset, length)
    total += length
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (let i = 0; i < runs.length; i += 2) {
    bytes.set(heap.subarray(runs[i]!, runs[i]! + runs[i + 1]!), at)
    at += runs[i + 1]!
  }
  return { pages: memory.buffer.byteLength / PAGE_BYTES, runs: Int32Array.from(runs), bytes }
}

/**
 * Writes `image` into `memory`: a fresh instance's memory, after its constructors ran and
 * before anything else, at least {@link MemoryImage.pages} large. Afterwards the memory
 * equals the booted VM's at the moment the image was taken.
 */
export function restoreMemoryImage(memory: WebAssembly.Memory, image: MemoryImage): void {
  if (memory.buffer.byteLength < image.pages * PAGE_BYTES) throw new RangeError('the memory is smaller than the image')
  const heap = new Uint8Array(memory.buffer)
  const { runs, bytes } = image
  let at = 0
  for (let i = 0; i < runs.length; i += 2) {
    const length = runs[i + 1]!
    heap.set(bytes.subarray(at, at + length), runs[i]!)
    at += length
  }
}

/**
 * Resets `memory` (an instance's memory at rest, after any number of runs) to `image` in
 * place: the image's runs copied back and every other byte zeroed, the pages the last run
 * grew included, so the memory equals a fresh one given the image. Chunks already zero
 * stay zero for the cost of a `fill`: cheaper than a fresh instance (`npm run bench:sandbox`).
 */
export function resetMemoryToImage(memory: WebAssembly.Memory, image: MemoryImage): void {
  const heap = new Uint8Array(memory.buffer)
  if (heap.length < image.pages * PAGE_BYTES) throw new RangeError('the memory is smaller than the image')
  const { runs, bytes } = image
  let at = 0
  let zeroFrom = 0
  for (let i = 0; i < runs.length; i += 2) {
    const offset = runs[i]!
    const length = runs[i + 1]!
    if (offset > zeroFrom) heap.fill(0, zeroFrom, offset)
    heap.set(bytes.subarray(at, at + length), offset)
    at += length
    zeroFrom = offset + length
  }
  heap.fill(0, zeroFrom)
}
