/**
 * Byte-pair merging of one pre-tokenized piece, counting the tokens it becomes.
 *
 * tiktoken's rule: start from single bytes and repeatedly merge the adjacent pair whose joined
 * bytes form the token of lowest rank, the leftmost pair on a tie, until no adjacent pair forms a
 * token. Its implementation (and js-tiktoken's, and gpt-tokenizer's) rescans all pairs after each
 * merge, which is quadratic: seconds on a 100,000-byte run without whitespace. Short pieces keep
 * that rescan, which is faster below about 100 bytes (measured on random letters); long pieces
 * use a min-heap.
 *
 * A piece is a range `[start, end)` of a "binary" string (one char per UTF-8 byte): the text
 * itself when it is ASCII, so that counting needs no copy.
 */
import { NO_RANK as NOT_A_TOKEN, type RankTable } from './rank-table';

/** Rank stored for a part that was merged into its left neighbour. */
const MERGED_AWAY = -1;
/** Heap keys are `rank * 2^32 + offset`: exact in a double while rank < 2^21 (it is < 2^18). */
const START_RANGE = 2 ** 32;
/** Merges or pair lookups between two looks at the clock. */
const CLOCK_CHECK_INTERVAL = 256;

// Scratch for countShortPieceTokens. Safe to share: that function never yields mid-way.
let shortStarts = new Int32Array(256);
let shortPairRanks = new Int32Array(256);

/**
 * Tokens in `bytes[start..end)` by tiktoken's own quadratic algorithm: best for short pieces (up
 * to a hundred bytes or so), where it allocates nothing and its scans stay in cache.
 */
export function countShortPieceTokens(table: RankTable, bytes: string, start: number, end: number): number {
  const length = end - start;
  if (length <= 1) return length;
  if (shortStarts.length < length + 1) {
    shortStarts = new Int32Array(2 * (length + 1));
    shortPairRanks = new Int32Array(2 * (length + 1));
  }
  // Part i spans [starts[i], starts[i + 1]) (absolute offsets into `bytes`); pairRanks[i] is the
  // rank of part i joined with part i + 1. The last entry is an end sentinel.
  const starts = shortStarts;
  const pairRanks = shortPairRanks;
  for (let i = 0; i < length - 1; i++) {
    starts[i] = start + i;
    pairRanks[i] = table.rankOf(bytes, start + i, start + i + 2);
  }
  starts[length - 1] = end - 1;
  pairRanks[length - 1] = NOT_A_TOKEN;
  starts[length] = end;
  let boundaries = length + 1;

  for (;;) {
    let minRank = NOT_A_TOKEN;
    let minIndex = -1;
    for (let i = 0; i < boundaries - 2; i++) {
      const rank = pairRanks[i]!;
      if (rank < minRank) {
        minRank = rank;
        minIndex = i;
      }
    }
    if (minIndex < 0) return boundaries - 1;

    // Merge parts minIndex and minIndex + 1; the pairs touching the merged part change.
    const i = minIndex;
    if (i > 0) pairRanks[i - 1] = table.rankOf(bytes, starts[i - 1]!, starts[i + 2]!);
    pairRanks[i] = i + 3 < boundaries ? table.rankOf(bytes, starts[i]!, starts[i + 3]!) : NOT_A_TOKEN;
    starts.copyWithin(i + 1, i + 2, boundaries);
    pairRanks.copyWithin(i + 1, i + 2, boundaries);
    boundaries--;
  }
}

/**
 * Counts the tokens of one long piece in O(n log n), and can stop at a deadline and resume, so
 * that a megabyte without whitespace never holds the event loop for long.
 *
 * Parts form a doubly linked list indexed by their first byte. A min-heap holds candidate merges
 * keyed by (rank, offset): popping the least key is exactly tiktoken's "lowest rank, leftmost on
 * ties". Entries go stale when a neighbour merges; rather than delete them, a popped entry counts
 * only if its rank is still the recorded rank of its part's pair. A pair's bytes only ever grow,
 * and a token's rank names its bytes, so a stale entry can never look current again.
 */
export class LongPieceMerge {
  private readonly length: number;
  // Indexed by a part's first byte, relative to the piece's start.
  private readonly nextPart: Int32Array;
  private readonly previousPart: Int32Array;
  /** Rank of the pair starting at each part, NOT_A_TOKEN, or MERGED_AWAY. */
  private readonly pairRank: Int32Array;
  private heap: Float64Array;
  private heapSize = 0;
  /** Pairs ranked so far while building the heap; length - 1 once it is built. */
  private pairsRanked = 0;
  private parts: number;

  constructor(
    private readonly table: RankTable,
    private readonly bytes: string,
    private readonly start: number,
    end: number,
  ) {
    const length = end - start;
    this.length = length;
    this.parts = length;
    // Each pair's links and rank are set as `run` ranks it, so a piece of megabytes costs only
    // allocation here and the rest happens in slices. The last part has no pair to rank.
    this.nextPart = new Int32Array(length);
    this.previousPart = new Int32Array(length);
    this.pairRank = new Int32Array(length);
    this.heap = new Float64Array(Math.max(16, length));
    this.nextPart[length - 1] = length;
    this.previousPart[length - 1] = length - 2;
    this.pairRank[length - 1] = NOT_A_TOKEN;
  }

  /** Tokens in the piece; final once `run` has returned true. */
  get tokenCount(): number {
    return this.parts;
  }

  /**
   * Works until the piece is fully merged (returns true) or `performance.now()` passes
   * `deadline` (returns false; call again to continue). `Infinity` runs to the end unchecked.
   */
  run(deadline: number): boolean {
    const checkClock = deadline !== Infinity;
    const { length, nextPart, previousPart, pairRank } = this;

    while (this.pairsRanked < length - 1) {
      const offset = this.pairsRanked++;
      nextPart[offset] = offset + 1;
      previousPart[offset] = offset - 1;
      const rank = this.rankOfParts(offset, offset + 2);
      pairRank[offset] = rank;
      if (rank !== NOT_A_TOKEN) this.push(rank * START_RANGE + offset);
      if (checkClock && offset % CLOCK_CHECK_INTERVAL === 0 && performance.now() >= deadline) return false;
    }

    let sinceClockCheck = 0;
    while (this.heapSize > 0) {
      if (checkClock && ++sinceClockCheck === CLOCK_CHECK_INTERVAL) {
        sinceClockCheck = 0;
        if (performance.now() >= deadline) return false;
      }
      const key = this.pop();
      const rank = Math.floor(key / START_RANGE);
      const offset = key - rank * START_RANGE;
      if (pairRank[offset] !== rank) continue; // stale

      const mergedAway = nextPart[offset]!;
      const end = nextPart[mergedAway]!;
      nextPart[offset] = end;
      if (end < length) previousPart[end] = offset;
      pairRank[mergedAway] = MERGED_AWAY;
      this.parts--;

      this.setPairRank(offset, end < length ? this.rankOfParts(offset, nextPart[end]!) : NOT_A_TOKEN);
      const previous = previousPart[offset]!;
      if (previous >= 0) this.setPairRank(previous, this.rankOfParts(previous, end));
    }
    return true;
  }

  private rankOfParts(from: number, to: number): number {
    return this.table.rankOf(this.bytes, this.start + from, this.start + to);
  }

  private setPairRank(offset: number, rank: number): void {
    if (this.pairRank[offset] === rank) return;
    this.pairRank[offset] = rank;
    if (rank !== NOT_A_TOKEN) this.push(rank * START_RANGE + offset);
  }

  private push(key: number): void {
    if (this.heapSize === this.heap.length) {
      const grown = new Float64Array(this.heap.length * 2);
      grown.set(this.heap);
      this.heap = grown;
    }
    const heap = this.heap;
    let child = this.heapSize++;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      const parentKey = heap[parent]!;
      if (parentKey <= key) break;
      heap[child] = parentKey;
      child = parent;
    }
    heap[child] = key;
  }

  private pop(): number {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap[--this.heapSize]!;
    const size = this.heapSize;
    let parent = 0;
    for (;;) {
      let child = 2 * parent + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1]! < heap[child]!) child++;
      if (heap[child]! >= last) break;
      heap[parent] = heap[child]!;
      parent = child;
    }
    heap[parent] = last;
    return top;
  }
}
