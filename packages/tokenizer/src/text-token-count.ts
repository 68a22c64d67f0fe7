import { asciiSplitterFor, type AsciiSplitter } from './ascii-splitter';
import { codeUnitsOf } from './code-units';
import { countShortPieceTokens, LongPieceMerge } from './byte-pair-merge';
import type { LoadedEncoding } from './encodings';
import { NO_RANK, type RankTable } from './rank-table';
import { unicodeSplitterFor, type UnicodeSplitter } from './unicode-splitter';

/**
 * Pieces of at least this many bytes are merged with the heap, which can also pause. The rescan
 * and the heap break even at about 100–128 bytes.
 */
const LONG_PIECE_BYTES = 128;
/** Pieces between two looks at the clock: short pieces take well under a microsecond each. */
const PIECES_BETWEEN_CLOCK_CHECKS = 64;

const NON_ASCII = /[^\0-\x7f]/;

/** Entries in a {@link MergedPieceCache} before it starts over. ~64 bytes per piece: ~2 MB. */
const MERGED_PIECE_CACHE_ENTRIES = 32_768;

/**
 * Token counts of short pieces that needed merging (identifiers, rare words, numbers with
 * separators), keyed by their bytes. Code repeats them a lot: this took a third off counting
 * 1 MB of code. Bounded by starting over when full, which costs nothing per lookup, unlike an LRU.
 */
export class MergedPieceCache {
  private readonly counts = new Map<string, number>();

  get(bytes: string): number | undefined {
    return this.counts.get(bytes);
  }

  set(bytes: string, tokens: number): void {
    if (this.counts.size >= MERGED_PIECE_CACHE_ENTRIES) this.counts.clear();
    this.counts.set(bytes, tokens);
  }
}

/**
 * The UTF-8 bytes of `piece` as a binary string (one char per byte). ASCII comes back as is. A
 * lone surrogate becomes U+FFFD's bytes, as in tiktoken (which replaces it before encoding).
 */
export function utf8BinaryString(piece: string): string {
  return NON_ASCII.test(piece) ? Buffer.from(piece, 'utf8').toString('latin1') : piece;
}

/**
 * One count of one text, resumable: split the text into pieces (the ASCII splitter where it can
 * decide, the Unicode splitter elsewhere), look each piece up whole, merge the rest. `run` can
 * stop at a deadline between pieces or inside a long piece's merge, so the async count can yield
 * without holding the event loop.
 */
export class TextTokenCount {
  private readonly ranks: RankTable;
  private readonly splitAscii: AsciiSplitter;
  private readonly splitUnicode: UnicodeSplitter;
  /** The text's code units, which the ASCII split and lookups read (code-units.ts says why). */
  private readonly units: Uint16Array;
  private position = 0;
  private counted = 0;
  private pendingMerge: LongPieceMerge | undefined;

  constructor(
    encoding: LoadedEncoding,
    private readonly text: string,
    private readonly mergedPieces: MergedPieceCache,
  ) {
    this.ranks = encoding.ranks;
    this.splitAscii = asciiSplitterFor(encoding.name);
    this.splitUnicode = unicodeSplitterFor(encoding.name);
    this.units = codeUnitsOf(text);
  }

  /** Tokens counted so far; the text's token count once `run` has returned true. */
  get tokens(): number {
    return this.counted;
  }

  /**
   * Counts until the end of the text (returns true) or until `performance.now()` passes
   * `deadline` (returns false; call again to go on). `Infinity` counts to the end unchecked.
   */
  run(deadline: number): boolean {
    if (this.pendingMerge) {
      if (!this.pendingMerge.run(deadline)) return false;
      this.counted += this.pendingMerge.tokenCount;
      this.pendingMerge = undefined;
    }

    const { text, units, splitAscii, splitUnicode } = this;
    const checkClock = deadline !== Infinity;
    let piecesSinceClockCheck = 0;
    while (this.position < text.length) {
      const start = this.position;
      let end = splitAscii(units, start);
      if (end >= 0) {
        // An ASCII piece: its chars are its bytes.
        if (end - start === 1 || this.ranks.rankOfUnits(units, start, end) !== NO_RANK) this.counted++;
        else this.countPiece(text, start, end, deadline, false);
      } else {
        end = splitUnicode(text, start);
        const bytes = utf8BinaryString(text.slice(start, end));
        this.countPiece(bytes, 0, bytes.length, deadline, true);
      }
      this.position = end;
      if (this.pendingMerge) return false;
      if (checkClock && ++piecesSinceClockCheck === PIECES_BETWEEN_CLOCK_CHECKS) {
        piecesSinceClockCheck = 0;
        if (performance.now() >= deadline) return false;
      }
    }
    return true;
  }

  /**
   * Adds the tokens of `bytes[start..end)`, or leaves a long merge pending at the deadline.
   * `lookUp`: whether the piece may be a token whole (the ASCII path has looked already).
   */
  private countPiece(bytes: string, start: number, end: number, deadline: number, lookUp: boolean): void {
    const length = end - start;
    if (lookUp && (length === 1 || this.ranks.rankOf(bytes, start, end) !== NO_RANK)) {
      this.counted++;
    } else if (length < LONG_PIECE_BYTES) {
      const piece = bytes.slice(start, end);
      let tokens = this.mergedPieces.get(piece);
      if (tokens === undefined) {
        tokens = countShortPieceTokens(this.ranks, bytes, start, end);
        this.mergedPieces.set(piece, tokens);
      }
      this.counted += tokens;
    } else {
      const merge = new LongPieceMerge(this.ranks, bytes, start, end);
      if (merge.run(deadline)) this.counted += merge.tokenCount;
      else this.pendingMerge = merge;
    }
  }
}
