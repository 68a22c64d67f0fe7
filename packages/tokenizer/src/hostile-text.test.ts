/**
 * Any string is counted, exactly, without throwing: long runs of every Unicode general category.
 * The split pattern run by V8 overflows its backtrack stack on a run of 5.1 million combining
 * marks ("Maximum call stack size exceeded"), which is why the splitters scan by hand.
 *
 * tiktoken is quadratic on a piece, so runs of a million are out of its reach. As in
 * long-text.test.ts, a run of one unit has a structure we can check instead: far from its start,
 * BPE turns every further RUN_PERIOD units into the same number of tokens. The recurrence is
 * checked against tiktoken for every residue before it is used.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { asciiSplitterFor } from './ascii-splitter';
import { codeUnitsOf } from './code-units';
import { ENCODING_NAMES, type EncodingName } from './encodings';
import { referenceCount } from './test-support/reference';
import { regexPieces } from './test-support/regex-split';
import { CATEGORY_SAMPLES, runsOfAnyCategory } from './test-support/unicode-categories';
import { getTokenizer } from './tokenizer';
import { unicodeSplitterFor } from './unicode-splitter';

const RUN_PERIOD = 16;
const VERIFIED_RUN_LENGTH = 600;

/**
 * Tokens in `unit` × `repeats` per tiktoken: counted whole at VERIFIED_RUN_LENGTH plus the
 * residue, then RUN_PERIOD units at a time, once tiktoken agrees that each period adds the same.
 */
function runTokens(encoding: EncodingName, unit: string, repeats: number): number {
  const count = (times: number): number => referenceCount(encoding, unit.repeat(times));
  const base = VERIFIED_RUN_LENGTH + ((repeats - VERIFIED_RUN_LENGTH) % RUN_PERIOD);
  const perPeriod = count(base + RUN_PERIOD) - count(base);
  for (let residue = 0; residue < RUN_PERIOD; residue++) {
    const length = VERIFIED_RUN_LENGTH + residue;
    expect({ unit, length, perPeriod: count(length + 2 * RUN_PERIOD) - count(length + RUN_PERIOD) }).toEqual({
      unit,
      length,
      perPeriod: count(length + RUN_PERIOD) - count(length),
    });
  }
  return count(base) + ((repeats - base) / RUN_PERIOD) * perPeriod;
}

/** The pieces a count splits `text` into: the ASCII splitter where it decides, else the Unicode one. */
function splitAsCounted(encoding: EncodingName, text: string): string[] {
  const [splitAscii, splitUnicode] = [asciiSplitterFor(encoding), unicodeSplitterFor(encoding)];
  const pieces: string[] = [];
  const units = codeUnitsOf(text);
  for (let start = 0; start < text.length;) {
    let end = splitAscii(units, start);
    if (end < 0) end = splitUnicode(text, start);
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

/** Long runs, one per kind of class the split patterns treat differently. */
const LONG_RUNS: ReadonlyArray<readonly [category: string, unit: string, repeats: number]> = [
  ['Lo', '日', 1_000_000],
  ['Po', '…', 1_000_000],
  ['Zs', '\u3000', 1_000_000],
  ['Sk (astral)', '\u{1F3FB}', 500_000],
  ['Cs (lone surrogates)', '\uD800', 1_000_000],
  ['Co', '\uE000', 1_000_000],
];

describe.each(ENCODING_NAMES)('%s on hostile text', (encoding) => {
  const tokenizer = getTokenizer(encoding);

  it(
    'counts 5,100,000 combining marks exactly, yielding to the event loop',
    { timeout: 180_000 },
    async () => {
      const text = '\u0301'.repeat(5_100_000);
      let turns = 0;
      let counting = true;
      const tick = (): void => {
        turns++;
        if (counting) setImmediate(tick);
      };
      setImmediate(tick);
      const tokens = await tokenizer.count(text).finally(() => (counting = false));
      expect(tokens).toBe(runTokens(encoding, '\u0301', 5_100_000));
      expect(turns).toBeGreaterThanOrEqual(3);
    },
  );

  it.each(LONG_RUNS)('counts a run of %s exactly', { timeout: 180_000 }, async (_category, unit, repeats) => {
    const text = unit.repeat(repeats);
    expect(text.length).toBeGreaterThanOrEqual(1_000_000);
    await expect(tokenizer.count(text)).resolves.toBe(runTokens(encoding, unit, repeats));
  });

  it('splits a million code units of runs of every category as the regex does', async () => {
    const text = fc.sample(runsOfAnyCategory(40, 3000), { seed: 24, numRuns: 200 }).join('');
    expect(text.length).toBeGreaterThanOrEqual(1_000_000);
    // The regex can still split this, as its runs are short.
    const expected = regexPieces(encoding, text);
    const pieces = splitAsCounted(encoding, text);
    const firstDifference = pieces.findIndex((piece, index) => piece !== expected[index]);
    expect({ firstDifference, pieces: pieces.length }).toEqual({
      firstDifference: -1,
      pieces: expected.length,
    });
    await expect(tokenizer.count(text)).resolves.toBe(tokenizer.countSync(text));
  });

  it('counts random runs of every category as tiktoken does', () => {
    fc.assert(
      fc.property(runsOfAnyCategory(4, 600), (text) => {
        expect(tokenizer.countSync(text)).toBe(referenceCount(encoding, text));
      }),
      { numRuns: 300 },
    );
  });

  it('counts a run of each category alone, 1 to 2,000 long, as tiktoken does', () => {
    for (const [category, chars] of Object.entries(CATEGORY_SAMPLES)) {
      for (const char of chars) {
        for (const repeats of [1, 2, 3, 17, 255, 2000]) {
          const text = char.repeat(repeats);
          expect({ category, char, repeats, tokens: tokenizer.countSync(text) }).toEqual({
            category,
            char,
            repeats,
            tokens: referenceCount(encoding, text),
          });
        }
      }
    }
  });
});
