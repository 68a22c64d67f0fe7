import { describe, expect, it } from 'vitest';
import { fitConstraints, rankConstraints } from './constraint-ranking';

const LINE = 'Constraint'.length + 5;
const options = { itemMaxChars: 1_000, lineChars: () => LINE };

describe('rankConstraints', () => {
  it('counts a restated constraint once, with its newest wording, most-repeated then newest first', () => {
    const ranked = rankConstraints([
      'Never touch the public API.',
      'Use only the standard library.',
      'never touch the public `API`',
      'Do not add dependencies.',
      'Never touch the public API!',
    ]);
    expect(ranked).toEqual([
      { text: 'Never touch the public API!', count: 3, newest: 4 },
      { text: 'Do not add dependencies.', count: 1, newest: 3 },
      { text: 'Use only the standard library.', count: 1, newest: 1 },
    ]);
  });

  it('takes given counts for entries that stand for several statements', () => {
    expect(rankConstraints(['Keep the CSV column order.', 'Stream the rows.'], [4, 1])).toEqual([
      { text: 'Keep the CSV column order.', count: 4, newest: 0 },
      { text: 'Stream the rows.', count: 1, newest: 1 },
    ]);
  });
});

describe('fitConstraints', () => {
  const ranked = rankConstraints([
    'Never log PII.', // 14 characters
    'Only change files under src/.', // 29
    'Never log PII.',
    'Always run the linter before a commit.', // 38
  ]);
  const [pii, only, always] = [
    'Never log PII.',
    'Only change files under src/.',
    'Always run the linter before a commit.',
  ];

  it.each<[number, string[], string[]]>([
    [1_000, [only, pii, always], []],
    // Rank: the repeated one, then the newest; the lister keeps them in the order they were stated.
    [LINE * 2 + 14 + 38, [pii, always], [only]],
    // The second-ranked does not fit; the third, shorter, still does.
    [LINE * 2 + 14 + 29, [only, pii], [always]],
    [LINE + 14, [pii], [always, only]],
    [0, [], [pii, always, only]],
  ])('in %i characters: lists %j, returns %j', (budget, listed, notListed) => {
    const fit = fitConstraints(ranked, budget, options);
    expect(fit.listed.map((c) => c.text)).toEqual(listed);
    expect(fit.notListed.map((c) => c.text)).toEqual(notListed);
    expect(fit.chars).toBeLessThanOrEqual(budget);
    expect(fit.chars).toBe(listed.reduce((sum, text) => sum + LINE + text.length, 0));
  });

  it('clips a long constraint to the item bound, and returns the unclipped text when it does not fit', () => {
    const long = `Never ${'rewrite the billing module '.repeat(10)}`.trim();
    const fit = fitConstraints(rankConstraints([long]), 1_000, { ...options, itemMaxChars: 50 });
    expect(fit.listed[0]!.text).toHaveLength(50);
    expect(fit.listed[0]!.text.endsWith('…')).toBe(true);
    expect(fitConstraints(rankConstraints([long]), 20, options).notListed[0]!.text).toBe(long);
  });
});
