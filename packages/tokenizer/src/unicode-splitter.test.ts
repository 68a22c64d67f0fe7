import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENCODING_NAMES, loadEncoding, type EncodingName } from './encodings';
import { withRustWhitespace } from './split-pattern';
import { regexPieces } from './test-support/regex-split';
import { anyCategoryChar, CATEGORY_SAMPLES, runsOfAnyCategory } from './test-support/unicode-categories';
import { unicodeSplitterFor } from './unicode-splitter';

const CONTRACTIONS = "'s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D";

/** The patterns unicode-splitter.ts implements by hand, as js-tiktoken ships them. */
const IMPLEMENTED_PATTERNS: Record<EncodingName, string> = {
  o200k_base: [
    `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(${CONTRACTIONS})?`,
    `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(${CONTRACTIONS})?`,
    '\\p{N}{1,3}',
    ' ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*',
    '\\s*[\\r\\n]+',
    '\\s+(?!\\S)',
    '\\s+',
  ].join('|'),
  cl100k_base: [
    `(${CONTRACTIONS})`,
    '[^\\r\\n\\p{L}\\p{N}]?\\p{L}+',
    '\\p{N}{1,3}',
    ' ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*',
    '\\s*[\\r\\n]+',
    '\\s+(?!\\S)',
    '\\s+',
  ].join('|'),
};

/** Cases where the regex backtracks across alternatives and the optional prefix. */
const BACKTRACKING_CASES = [
  '\u0301ÀÀÀ', // o200k: no lowercase after the prefix, so the mark alone matches the first alternative
  '\u0301ÀÀÀa',
  'ʰÀÀ', // a modifier letter ends the first alternative before the uppercase run
  'ʰÀʰÀʰÀ',
  'ÀÀÀʰ',
  ' \u0301\u0301\u0301',
  '.\u0301.\u0301.\u0301',
  '\u0301\u0301 \u0301',
  'ǅǅaǅ',
  "日本's ÀÀ'S ǅ'll \u0301'd",
  '\n \n  \u3000x',
  '  \u0085\u0085{',
  ' \u00A0\u2028\u2029 ',
  '1١२𝟘²½Ⅻ',
  ' …//\r\n/',
  '\uD800\uD800\uDC00\uDC00x',
  '😀\u{1F3FB}\u{E0001}\u{E0100}',
];

it('the test samples of every general category are in it, one code point each', () => {
  for (const [category, chars] of Object.entries(CATEGORY_SAMPLES)) {
    const inCategory = new RegExp(`^\\p{gc=${category}}$`, 'u');
    for (const char of chars) {
      expect({ category, char, ok: inCategory.test(char), codePoints: [...char].length }).toEqual({
        category,
        char,
        ok: true,
        codePoints: 1,
      });
    }
  }
});

describe.each(ENCODING_NAMES)('%s Unicode splitter', (encoding) => {
  const split = unicodeSplitterFor(encoding);

  /** Splits `text` from the start with the scanner, and expects the regex's pieces. */
  function compare(text: string): void {
    const pieces: string[] = [];
    for (let start = 0; start < text.length;) {
      const end = split(text, start);
      expect(end).toBeGreaterThan(start);
      pieces.push(text.slice(start, end));
      start = end;
    }
    expect(pieces).toEqual(regexPieces(encoding, text));
  }

  it('splits a code point newer than tiktoken’s Unicode as an unassigned one', () => {
    compare('\u{323B0}_A');
    compare('a\u{11DB0}_A');
    // Punctuation with the underscore, as tiktoken splits it; a letter would stand alone.
    expect(regexPieces(encoding, '\u{323B0}_A')).toEqual(['\u{323B0}_', 'A']);
  });

  it('implements the pattern the encoding ships', () => {
    expect(loadEncoding(encoding).splitPattern).toBe(withRustWhitespace(IMPLEMENTED_PATTERNS[encoding]));
  });

  it.each(BACKTRACKING_CASES)('splits %j as the regex does', compare);

  it('splits as the regex does on text of every category', () => {
    fc.assert(fc.property(fc.string({ unit: anyCategoryChar, maxLength: 40 }), compare), { numRuns: 5000 });
  });

  it('splits as the regex does on runs of every category', () => {
    fc.assert(fc.property(runsOfAnyCategory(5, 30), compare), { numRuns: 3000 });
  });

  it('splits as the regex does on any code points', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 60 }), compare), { numRuns: 2000 });
  });
});
