import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countShortPieceTokens, LongPieceMerge } from './byte-pair-merge';
import { loadEncoding } from './encodings';
import { packTokens, RankTable } from './rank-table';
import { referenceCount } from './test-support/reference';

/** Binary strings (one char per byte) over a few bytes, so that ties and long merges abound. */
const bytesOver = (alphabet: string, maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...alphabet), minLength: 2, maxLength });

function countWithHeap(table: RankTable, bytes: string, deadline = Infinity): number {
  const merge = new LongPieceMerge(table, bytes, 0, bytes.length);
  let calls = 1;
  while (!merge.run(deadline)) calls++;
  expect(calls).toBeLessThanOrEqual(bytes.length + 2);
  return merge.tokenCount;
}

describe('byte-pair merging', () => {
  const o200k = loadEncoding('o200k_base').ranks;
  const countWithRescan = (table: RankTable, bytes: string): number =>
    countShortPieceTokens(table, bytes, 0, bytes.length);

  it('counts a range of a longer string, as for a piece of ASCII text', () => {
    const text = 'say xxxxxxxxxxxxxxxxxxxxxxx!';
    const piece = text.slice(4, 27);
    expect(countShortPieceTokens(o200k, text, 4, 27)).toBe(countWithRescan(o200k, piece));
    const merge = new LongPieceMerge(o200k, text, 4, 27);
    expect(merge.run(Infinity)).toBe(true);
    expect(merge.tokenCount).toBe(countWithRescan(o200k, piece));
  });

  it('gives tiktoken’s result on one whole piece (a run of one letter)', () => {
    for (const length of [2, 3, 8, 9, 17, 100, 1001]) {
      const piece = 'x'.repeat(length);
      expect(countWithRescan(o200k, piece)).toBe(referenceCount('o200k_base', piece));
      expect(countWithHeap(o200k, piece)).toBe(referenceCount('o200k_base', piece));
    }
  });

  it('heap and rescan agree on arbitrary bytes, tokens or not', () => {
    fc.assert(
      fc.property(
        fc.oneof(bytesOver('ab', 400), bytesOver('e ts', 400), bytesOver('\x00\xc3\xa9\xff=', 200)),
        (bytes) => {
          expect(countWithHeap(o200k, bytes)).toBe(countWithRescan(o200k, bytes));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('merges the leftmost of equal-rank pairs first, as tiktoken does', () => {
    // In "aaab" the pairs at 0 and 1 are both "aa". Leftmost first: aa|a|b, and neither "aaa" nor
    // "ab" is a token, so 3 tokens. Rightmost first would give a|aa|b, then a|aab: 2 tokens.
    const table = new RankTable(packTokens(['a', 'b', 'aa', 'aab'], [0, 1, 2, 3]));
    expect(countWithRescan(table, 'aaab')).toBe(3);
    expect(countWithHeap(table, 'aaab')).toBe(3);
    // Merges chain: in "baab" only "aa" is a pair at first; then b|aa|b merges on to b|aab.
    expect(countWithRescan(table, 'baab')).toBe(2);
    expect(countWithHeap(table, 'baab')).toBe(2);
  });

  it('resumes where it stopped: a deadline in the past changes nothing but the number of calls', () => {
    fc.assert(
      fc.property(bytesOver('ab=', 3000), (bytes) => {
        expect(countWithHeap(o200k, bytes, 0)).toBe(countWithHeap(o200k, bytes));
      }),
      { numRuns: 30 },
    );
  });
});
