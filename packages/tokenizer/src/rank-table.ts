/**
 * Token ranks by byte sequence, looked up in place: `rankOf(text, start, end)` hashes the chars
 * of a range directly, so counting never allocates a substring just to ask "is this a token?".
 * A `Map<string, number>` needs a slice per lookup, of every piece and of every pair inside BPE.
 *
 * Byte sequences to look up are "binary" strings (one char per byte, 0–255); ASCII text is
 * already one. The tokens themselves live in one byte array, not in 200,000 strings: loading
 * leaves almost no garbage behind, so the first counts after it are not held up by a major GC.
 */

/** What `rankOf` returns for bytes that are not a token: above every real rank. */
export const NO_RANK = 0x7fffffff;

const EMPTY_SLOT = -1;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** murmur3's finalizer: FNV-1a's low bits (the slot) are weak on their own. */
function finishHash(hash: number): number {
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  return hash | 0;
}

function hashChars(chars: string, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ chars.charCodeAt(i), FNV_PRIME);
  return finishHash(hash);
}

/** {@link hashChars} of the same chars as code units (code-units.ts): the same hash. */
function hashUnits(units: Uint16Array, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ units[i]!, FNV_PRIME);
  return finishHash(hash);
}

function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, FNV_PRIME);
  return finishHash(hash);
}

/** Every token's bytes end to end, as the rank file parser produces them. */
export interface PackedTokens {
  /** All tokens' bytes, one after the other. */
  readonly bytes: Uint8Array;
  /** Token i is `bytes[tokenStarts[i] .. tokenStarts[i + 1])`; one more entry than tokens. */
  readonly tokenStarts: Int32Array;
  /** Rank of token i. */
  readonly ranks: Int32Array;
}

/** Packs tokens given as binary strings (for tests and small tables). */
export function packTokens(tokens: readonly string[], ranks: readonly number[]): PackedTokens {
  const tokenStarts = new Int32Array(tokens.length + 1);
  for (let i = 0; i < tokens.length; i++) tokenStarts[i + 1] = tokenStarts[i]! + tokens[i]!.length;
  const bytes = new Uint8Array(tokenStarts[tokens.length]!);
  tokens.forEach((token, i) => {
    for (let j = 0; j < token.length; j++) bytes[tokenStarts[i]! + j] = token.charCodeAt(j);
  });
  return { bytes, tokenStarts, ranks: Int32Array.from(ranks) };
}

/** An open-addressing hash table (linear probing, load ≤ 0.5) from byte sequence to rank. */
export class RankTable {
  /** Bytes in the longest token: a longer range is never a token, so it needs no lookup. */
  readonly maxTokenBytes: number;
  /** Number of tokens. */
  readonly size: number;
  private readonly bytes: Uint8Array;
  private readonly slotMask: number;
  private readonly slotRanks: Int32Array;
  private readonly slotHashes: Int32Array;
  /** Where each slot's token starts in `bytes`, and its length. */
  private readonly slotStarts: Int32Array;
  private readonly slotLengths: Int32Array;

  constructor({ bytes, tokenStarts, ranks }: PackedTokens) {
    const size = ranks.length;
    let slots = 16;
    while (slots < 2 * size) slots *= 2;
    this.bytes = bytes;
    this.slotMask = slots - 1;
    this.slotRanks = new Int32Array(slots).fill(EMPTY_SLOT);
    this.slotHashes = new Int32Array(slots);
    this.slotStarts = new Int32Array(slots);
    this.slotLengths = new Int32Array(slots);
    let maxTokenBytes = 0;
    for (let i = 0; i < size; i++) {
      const start = tokenStarts[i]!;
      const end = tokenStarts[i + 1]!;
      const hash = hashBytes(bytes, start, end);
      let slot = hash & this.slotMask;
      while (this.slotRanks[slot] !== EMPTY_SLOT) {
        if (this.slotHashes[slot] === hash && this.slotMatchesBytes(slot, start, end)) {
          throw new Error(`duplicate token of rank ${ranks[i]}`);
        }
        slot = (slot + 1) & this.slotMask;
      }
      this.slotRanks[slot] = ranks[i]!;
      this.slotHashes[slot] = hash;
      this.slotStarts[slot] = start;
      this.slotLengths[slot] = end - start;
      maxTokenBytes = Math.max(maxTokenBytes, end - start);
    }
    this.size = size;
    this.maxTokenBytes = maxTokenBytes;
  }

  /** Rank of the token whose bytes are the chars `chars[start..end)`, or {@link NO_RANK}. */
  rankOf(chars: string, start: number, end: number): number {
    const length = end - start;
    if (length > this.maxTokenBytes) return NO_RANK;
    const hash = hashChars(chars, start, end);
    const { slotRanks, slotHashes, slotMask } = this;
    for (let slot = hash & slotMask; ; slot = (slot + 1) & slotMask) {
      const rank = slotRanks[slot]!;
      if (rank === EMPTY_SLOT) return NO_RANK;
      if (slotHashes[slot] === hash && this.slotMatchesChars(slot, chars, start, length)) return rank;
    }
  }

  /**
   * {@link rankOf} of chars given as code units (code-units.ts), as the counting loop holds its
   * text: a unit above 255 is no byte, so it matches no token.
   */
  rankOfUnits(units: Uint16Array, start: number, end: number): number {
    const length = end - start;
    if (length > this.maxTokenBytes) return NO_RANK;
    const hash = hashUnits(units, start, end);
    const { slotRanks, slotHashes, slotMask } = this;
    for (let slot = hash & slotMask; ; slot = (slot + 1) & slotMask) {
      const rank = slotRanks[slot]!;
      if (rank === EMPTY_SLOT) return NO_RANK;
      if (slotHashes[slot] === hash && this.slotMatchesUnits(slot, units, start, length)) return rank;
    }
  }

  private slotMatchesUnits(slot: number, units: Uint16Array, start: number, length: number): boolean {
    if (this.slotLengths[slot] !== length) return false;
    const tokenStart = this.slotStarts[slot]!;
    for (let i = 0; i < length; i++) if (this.bytes[tokenStart + i] !== units[start + i]) return false;
    return true;
  }

  private slotMatchesChars(slot: number, chars: string, start: number, length: number): boolean {
    if (this.slotLengths[slot] !== length) return false;
    const tokenStart = this.slotStarts[slot]!;
    for (let i = 0; i < length; i++)
      if (this.bytes[tokenStart + i] !== chars.charCodeAt(start + i)) return false;
    return true;
  }

  private slotMatchesBytes(slot: number, start: number, end: number): boolean {
    if (this.slotLengths[slot] !== end - start) return false;
    const tokenStart = this.slotStarts[slot]!;
    for (let i = 0; i < end - start; i++)
      if (this.bytes[tokenStart + i] !== this.bytes[start + i]) return false;
    return true;
  }
}
