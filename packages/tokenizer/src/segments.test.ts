import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENCODING_NAMES, loadEncoding } from './encodings';
import { segmentEnds } from './segments';
import { sampleText } from './test-support/sample-text';
import { MergedPieceCache, TextTokenCount } from './text-token-count';
import { getTokenizer } from './tokenizer';

/** The count of `text` in one part, whatever its length. */
function wholeCount(encoding: (typeof ENCODING_NAMES)[number], text: string): number {
  const counting = new TextTokenCount(loadEncoding(encoding), text, new MergedPieceCache());
  counting.run(Infinity);
  return counting.tokens;
}

/** The sum of the counts of `text`'s parts cut `size` characters apart. */
function partsCount(encoding: (typeof ENCODING_NAMES)[number], text: string, size: number): number {
  let from = 0;
  let tokens = 0;
  for (const end of segmentEnds(text, size)) {
    tokens += wholeCount(encoding, text.slice(from, end));
    from = end;
  }
  return tokens;
}

describe('segmentEnds', () => {
  it('cuts after a line feed that a letter or digit follows, each part at least `size` long', () => {
    const text = 'a\nb c\n/d\n e\n9 f\nend';
    expect(segmentEnds(text, 2)).toEqual([12, 16, text.length]);
    expect(segmentEnds(text, 100)).toEqual([text.length]);
    expect(segmentEnds('no line feed at all', 3)).toEqual([19]);
  });

  it.each(ENCODING_NAMES)('%s: the parts count what the whole counts', (encoding) => {
    const pieces = fc.constantFrom(
      '\n',
      '\r\n',
      '\n\n',
      ' \n',
      '\t\n',
      ';\n',
      '}\n',
      '//\n',
      '\n/',
      'word',
      "don't",
      "'s",
      'x',
      '42',
      '1234',
      ' ',
      '  ',
      '—',
      '日本',
      '🚀',
      '\u0085',
      '\u00a0',
      '\n\u00a0',
      'é',
      '(',
      ')',
      '\n\n\n',
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 60 }), fc.integer({ min: 1, max: 12 }), (parts, size) => {
        const text = parts.join('');
        expect(partsCount(encoding, text, size)).toBe(wholeCount(encoding, text));
      }),
      { numRuns: 1_500 },
    );
    const sample = sampleText(60_000, 3);
    expect(segmentEnds(sample, 4_000).length).toBeGreaterThan(5);
    expect(partsCount(encoding, sample, 4_000)).toBe(wholeCount(encoding, sample));
  });

  it('counts a text longer than one part as its parts add up', async () => {
    const line = "export const value = compute(42); // it's fine — 日本\n";
    const text = line.repeat(Math.ceil((2.5 * (1 << 20)) / line.length));
    expect(segmentEnds(text).length).toBe(3);
    const tokenizer = getTokenizer('o200k_base');
    expect(tokenizer.countSync(text)).toBe(wholeCount('o200k_base', text));
    expect(await tokenizer.count(text)).toBe(wholeCount('o200k_base', text));
  });
});
