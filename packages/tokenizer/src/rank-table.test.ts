import { describe, expect, it } from 'vitest';
import { NO_RANK, packTokens, RankTable } from './rank-table';

describe('RankTable', () => {
  const table = new RankTable(packTokens(['a', 'b', 'ab', 'abc', '\xc3\xa9'], [0, 1, 7, 3, 9]));

  it('finds a token by any range of a string that spells it', () => {
    expect(table.rankOf('ab', 0, 2)).toBe(7);
    expect(table.rankOf('xxabcxx', 2, 5)).toBe(3);
    expect(table.rankOf('xxabcxx', 2, 4)).toBe(7);
    expect(table.rankOf('caf\xc3\xa9', 3, 5)).toBe(9);
  });

  it('answers NO_RANK for bytes that are not a token, longer than any token included', () => {
    expect(table.rankOf('ba', 0, 2)).toBe(NO_RANK);
    expect(table.rankOf('abcd', 0, 4)).toBe(NO_RANK);
    expect(table.rankOf('\xc3', 0, 1)).toBe(NO_RANK);
  });

  it('knows its size and longest token', () => {
    expect(table.size).toBe(5);
    expect(table.maxTokenBytes).toBe(3);
  });

  it('rejects a duplicate token', () => {
    expect(() => new RankTable(packTokens(['a', 'a'], [0, 1]))).toThrow(/duplicate token of rank 1/);
  });

  it('finds each of thousands of tokens, and nothing else', () => {
    const tokens = Array.from({ length: 5000 }, (_, i) => i.toString(36));
    const big = new RankTable(
      packTokens(
        tokens,
        tokens.map((_, i) => i),
      ),
    );
    tokens.forEach((token, rank) => expect(big.rankOf(`<${token}>`, 1, token.length + 1)).toBe(rank));
    expect(big.rankOf('zzzz', 0, 4)).toBe(NO_RANK);
  });
});
