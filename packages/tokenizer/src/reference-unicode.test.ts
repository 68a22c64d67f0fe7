import { describe, expect, it } from 'vitest';
import { UNASSIGNED_IN_REFERENCE, unassignedInReference } from './reference-unicode';
import { codePointsUnassignedInReference, referenceCount } from './test-support/reference';
import { getTokenizer } from './tokenizer';

describe('code points newer than tiktoken’s Unicode', () => {
  it('are the ones tiktoken itself leaves unassigned, and no others', () => {
    expect(codePointsUnassignedInReference()).toEqual(UNASSIGNED_IN_REFERENCE.map(([a, b]) => [a, b]));
  });

  it.each([
    [0x323b0, true],
    [0x33479, true],
    [0x3347a, false],
    [0x323af, false],
    [0x88f, true],
    [0x890, false],
    [0x4e00, false],
    [0x41, false],
  ])('U+%s is in the table: %s', (codePoint, expected) => {
    expect(unassignedInReference(codePoint)).toBe(expected);
  });

  it.each(['cl100k_base', 'o200k_base'] as const)('count as tiktoken counts them (%s)', (encoding) => {
    const tokenizer = getTokenizer(encoding);
    for (const [first, last] of UNASSIGNED_IN_REFERENCE) {
      for (const codePoint of new Set([first, last, (first + last) >> 1])) {
        const char = String.fromCodePoint(codePoint);
        for (const text of [`${char}_A`, `a${char}_A`, `${char}${char}x`, ` ${char}1`, `A${char}'s`]) {
          expect({ text, tokens: tokenizer.countSync(text) }).toEqual({
            text,
            tokens: referenceCount(encoding, text),
          });
        }
      }
    }
  });
});
