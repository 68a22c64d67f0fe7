/**
 * A few code points of every Unicode general category, astral ones included where the category
 * has them, and the ASCII chars the split patterns treat specially (space, apostrophe, slash,
 * `\r`, `\n`). `unicode-splitter.test.ts` checks that each sample is in its category, so the
 * list cannot drift from Node's ICU.
 */
import fc from 'fast-check';

export const CATEGORY_SAMPLES: Readonly<Record<string, readonly string[]>> = {
  Lu: ['A', 'Z', 'É', 'Ω', 'Ж', '\u{1D400}'],
  Ll: ['a', 'z', 'é', 'ß', 'ſ', '\u{1D41A}'],
  Lt: ['ǅ', 'ǈ', 'ᾈ'],
  Lm: ['ʰ', 'ー', 'ᵃ', '\u{16FE0}'],
  Lo: ['日', 'ا', 'א', 'ก', 'ꀀ', '\u{20000}'],
  Mn: ['\u0301', '\u0308', '\u05B0', '\u0E31', '\u{1D167}', '\u{E0100}'],
  Mc: ['\u0903', '\u093E', '\u{1D165}'],
  Me: ['\u20DD', '\u0488', '\uA670'],
  Nd: ['0', '7', '٣', '५', '\u{1D7D8}'],
  Nl: ['Ⅻ', '〇', '\u{10140}'],
  No: ['²', '½', '①', '\u{10107}'],
  Pc: ['_', '‿', '＿'],
  Pd: ['-', '—', '‐', '〜'],
  Ps: ['(', '[', '{', '「'],
  Pe: [')', ']', '}', '」'],
  Pi: ['«', '‘', '“'],
  Pf: ['»', '’', '”'],
  Po: ['.', '!', "'", '/', '…', '。', '\u{10100}'],
  Sm: ['+', '=', '∑', '\u{1D6C1}'],
  Sc: ['$', '€', '¥', '₿'],
  Sk: ['^', '`', '¨', '\u{1F3FB}'],
  So: ['©', '°', '\uFFFD', '😀', '🚀'],
  Zs: [' ', '\u00A0', '\u1680', '\u2003', '\u202F', '\u3000'],
  Zl: ['\u2028'],
  Zp: ['\u2029'],
  Cc: ['\t', '\n', '\r', '\u000B', '\u0000', '\u007F', '\u0085', '\u009F'],
  Cf: ['\u00AD', '\u180E', '\u200B', '\u200D', '\u2060', '\uFEFF', '\u{E0001}'],
  Cs: ['\uD800', '\uDBFF', '\uDC00', '\uDFFF'],
  Co: ['\uE000', '\uF8FF', '\u{F0000}', '\u{10FFFD}'],
  // Noncharacters, which stay unassigned in every Unicode version, and one long-reserved slot.
  Cn: ['\u0378', '\uFDD0', '\uFFFF', '\u{1FFFE}', '\u{10FFFF}'],
};

export const CATEGORIES = Object.keys(CATEGORY_SAMPLES);

/** One sample code point of any category (each category equally likely), or any code point at all. */
export const anyCategoryChar: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(...CATEGORIES).chain((gc) => fc.constantFrom(...CATEGORY_SAMPLES[gc]!)),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
);

/**
 * Text made of `maxRuns` runs at most, each one char (or a two-char unit, so that alternations
 * such as "Àa" or " \u0301" repeat) repeated up to `maxRunLength` times: where the split
 * patterns' greedy loops and their backtracking do their work.
 */
export function runsOfAnyCategory(maxRuns: number, maxRunLength: number): fc.Arbitrary<string> {
  const unit = fc.oneof(
    { weight: 3, arbitrary: anyCategoryChar },
    { weight: 1, arbitrary: fc.tuple(anyCategoryChar, anyCategoryChar).map(([a, b]) => a + b) },
  );
  const run = fc
    .tuple(unit, fc.integer({ min: 1, max: maxRunLength }))
    .map(([chars, times]) => chars.repeat(times));
  return fc.array(run, { minLength: 1, maxLength: maxRuns }).map((runs) => runs.join(''));
}
