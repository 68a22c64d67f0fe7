import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codeUnitsOf } from './code-units';
import { getTokenizer } from './tokenizer';
import { referenceCount } from './test-support/reference';

describe('codeUnitsOf', () => {
  it('holds every UTF-16 code unit of the text, lone surrogates included, as charCodeAt reads them', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.oneof(
            fc.constantFrom('\ud800', '\udfff', 'é', '🚀', '\0'),
            fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
          ),
        }),
        (text) => {
          const units = codeUnitsOf(text);
          expect(units.length).toBe(text.length);
          for (let i = 0; i < text.length; i++) expect(units[i]).toBe(text.charCodeAt(i));
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('leaves counts exact once a module subclasses String (what slows charCodeAt)', () => {
    class Tagged extends String {}
    expect(new Tagged('x').length).toBe(1);
    const text = "Never run `npm publish` — ask first.\n\tconst x = f(1, 2); // it's ok\r\n日本語 🚀 ".repeat(
      40,
    );
    for (const name of ['o200k_base', 'cl100k_base'] as const) {
      expect(getTokenizer(name).countSync(text)).toBe(referenceCount(name, text));
    }
  });
});
