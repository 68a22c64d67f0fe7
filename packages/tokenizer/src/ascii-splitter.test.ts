import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { asciiSplitterFor } from './ascii-splitter';
import { codeUnitsOf } from './code-units';
import { ENCODING_NAMES, loadEncoding } from './encodings';

/** ASCII of every class, a few non-ASCII chars that continue letter, digit, punctuation or whitespace runs. */
const UNIT = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 3 }) },
  {
    weight: 4,
    arbitrary: fc.constantFrom("'s", "'T", "'re", "'Ll", "'ve", "'m", "'d", "'", '//', '\r\n', '  ', '123'),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'é',
      'ſ',
      '\u0301',
      '١',
      '²',
      '—',
      '…',
      '🚀',
      '\u00a0',
      '\u0085',
      '\u3000',
      '\uFEFF',
    ),
  },
);

describe.each(ENCODING_NAMES)('%s ASCII splitter', (encoding) => {
  const splitAt = asciiSplitterFor(encoding);
  const pattern = new RegExp(loadEncoding(encoding).splitPattern, 'gu');

  /** Every piece the regex finds, with what the splitter says at its start. */
  function compare(text: string): void {
    const units = codeUnitsOf(text);
    for (const match of text.matchAll(pattern)) {
      const end = splitAt(units, match.index);
      if (end === -1) {
        // Giving up is only allowed where a non-ASCII char is within reach.
        expect(text.slice(match.index)).toMatch(/[^\0-\x7f]/);
      } else {
        expect({ at: match.index, piece: text.slice(match.index, end) }).toEqual({
          at: match.index,
          piece: match[0],
        });
      }
    }
  }

  it.each([
    ['words', "Hello world, it's JSONParser's HTTPServer iPhone x'll they'RE"],
    ['whitespace', 'a  b\t\tc \n d\n\n  \r\n\t x   '],
    ['punctuation', '((x)) => {a}; // c\n/* b */ \n/// d\n}\n//'],
    ['digits', '1 12 123 1234 12345 x1y22z333'],
    ['control characters', '\0\x01a\x1c b\x1f\x7f\x0b\x0cz'],
  ])('agrees with the regex on %s', (_label, text) => compare(text));

  it('agrees with the regex, or defers to it, on random text', () => {
    fc.assert(fc.property(fc.string({ unit: UNIT, maxLength: 40 }), compare), { numRuns: 5000 });
  });

  it('never defers on pure ASCII', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 60 }), (text) => {
        const units = codeUnitsOf(text);
        for (let start = 0; start < text.length; start = splitAt(units, start)) {
          expect(splitAt(units, start)).toBeGreaterThan(start);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
