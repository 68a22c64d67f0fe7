import { describe, expect, it } from 'vitest';
import type { PlannedChunk } from './chunking';
import { boundFileOps, planSummaryChunks, promptTokenBudget } from './chunking';

const ranges = (chunks: PlannedChunk[]): Array<[number, number]> => chunks.map((c) => [c.start, c.end]);

describe('planSummaryChunks', () => {
  it.each<[string, number[], number, number[] | undefined, Array<[number, number]>]>([
    ['everything fits in one chunk', [10, 20, 30], 100, undefined, [[0, 3]]],
    [
      'greedy packing in order',
      [40, 40, 40, 40],
      100,
      undefined,
      [
        [0, 2],
        [2, 4],
      ],
    ],
    [
      'an exact fit closes the chunk',
      [50, 50, 50],
      100,
      undefined,
      [
        [0, 2],
        [2, 3],
      ],
    ],
    [
      'an oversized message sits alone',
      [30, 250, 30],
      100,
      undefined,
      [
        [0, 1],
        [1, 2],
        [2, 3],
      ],
    ],
    ['no messages, no chunks', [], 100, undefined, []],
    [
      'a chunk closes at the latest turn start in its second half',
      [20, 20, 20, 20, 20, 20],
      100,
      [0, 3, 4],
      [
        [0, 4],
        [4, 6],
      ],
    ],
    [
      'a turn start in the first half does not shorten the chunk',
      [20, 20, 20, 20, 20, 20],
      100,
      [1],
      [
        [0, 5],
        [5, 6],
      ],
    ],
    ['zero-token messages still land in a chunk', [0, 0, 100, 0], 100, undefined, [[0, 4]]],
  ])('%s', (_name, tokens, budget, turnStarts, expected) => {
    const chunks = planSummaryChunks({
      messageTokens: tokens,
      budgetTokens: budget,
      ...(turnStarts ? { turnStarts: new Set(turnStarts) } : {}),
    });
    expect(ranges(chunks)).toEqual(expected);
  });

  it('covers every message exactly once and respects the budget unless oversized', () => {
    const tokens = Array.from({ length: 200 }, (_, i) => (i * 7919) % 130);
    const chunks = planSummaryChunks({
      messageTokens: tokens,
      budgetTokens: 120,
      turnStarts: new Set([0, 10, 50, 51, 120]),
    });
    expect(chunks[0]?.start).toBe(0);
    expect(chunks.at(-1)?.end).toBe(200);
    for (const [i, chunk] of chunks.entries()) {
      if (i > 0) expect(chunk.start).toBe(chunks[i - 1]?.end);
      expect(chunk.tokens).toBe(tokens.slice(chunk.start, chunk.end).reduce((a, b) => a + b, 0));
      expect(
        chunk.oversized ? chunk.end - chunk.start === 1 && chunk.tokens > 120 : chunk.tokens <= 120,
      ).toBe(true);
    }
  });

  it('refuses a budget of zero', () => {
    expect(() => planSummaryChunks({ messageTokens: [1], budgetTokens: 0 })).toThrow(RangeError);
  });
});

describe('promptTokenBudget', () => {
  it.each([
    [{ contextWindow: 10_000, maxOutputTokens: 1_000 }, 10_000 - 1_000 - 1_000 - 16],
    [{ contextWindow: 128_000, maxOutputTokens: 4_096, safetyRatio: 0.05 }, 128_000 - 4_096 - 6_400 - 16],
    [{ contextWindow: 1_000, maxOutputTokens: 1_000 }, -116],
  ])('%o → %i', (input, expected) => {
    expect(promptTokenBudget(input)).toBe(expected);
  });
});

describe('boundFileOps', () => {
  const ops = { readFiles: ['a.ts', 'b.ts', 'c.ts'], modifiedFiles: ['x.ts', 'y.ts'] };
  it.each<[string, number, { readFiles: string[]; modifiedFiles: string[] }]>([
    ['everything fits: unchanged', 100, ops],
    ['modified files first, then read files', 15, { modifiedFiles: ['x.ts', 'y.ts'], readFiles: ['a.ts'] }],
    ['only some modified files', 7, { modifiedFiles: ['x.ts'], readFiles: [] }],
    ['nothing', 0, { modifiedFiles: [], readFiles: [] }],
  ])('%s', (_name, maxChars, expected) => {
    expect(boundFileOps(ops, maxChars)).toEqual(expected);
  });

  it('returns the same object when nothing is cut, and null for null', () => {
    expect(boundFileOps(ops, Infinity)).toBe(ops);
    expect(boundFileOps(null, 10)).toBeNull();
  });
});
