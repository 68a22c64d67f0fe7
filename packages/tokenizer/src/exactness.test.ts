import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENCODING_NAMES } from './encodings';
import { referenceCount } from './test-support/reference';
import { sampleText } from './test-support/sample-text';
import { getTokenizer } from './tokenizer';

const TRICKY_TEXTS: ReadonlyArray<readonly [label: string, text: string]> = [
  ['empty', ''],
  // Unicode 17.0 assigns it (CJK Extension J); tiktoken's tables leave it unassigned (reference-unicode.ts).
  ['a code point newer than the reference’s Unicode', '\u{323B0}_A'],
  ['one space', ' '],
  ['space runs', 'a  b   c    d     '],
  ['whitespace only', ' \t \t  '],
  ['newlines', '\n\n\nx\n'],
  ['CRLF', 'line one\r\nline two\r\n\r\n  indented\r\n'],
  ['spaces before newline', 'a   \n   b \n\n \t\n'],
  ['trailing spaces', 'end   '],
  ['contractions', "I'm sure you'll see it's what we'd've done; THEY'RE DON'T Can'T we'Ve"],
  ['dangling apostrophes', "' 's ''s x'' 'tis rock'n'roll"],
  ['digits', '1 12 123 1234 12345 3.14159 1,000,000 0x1F 1e-9 ١٢٣٤ ²³ Ⅻ'],
  ['emoji', '🚀 👩‍💻 🇫🇷🇩🇪 ❤️ 👍🏽 😀😀😀'],
  ['astral letters', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝 𠀀𠀁 𓀀'],
  ['CJK', '日本語のテキストは空白を含まない。中文没有空格。한국어 문장입니다.'],
  ['Arabic and Hebrew', 'مرحبا بالعالم! שלום עולם'],
  ['combining marks', 'e\u0301 a\u0308\u0304 ñ n\u0303 ॐ स्वागत'],
  ['mixed case', 'iPhone McDonald XMLHttpRequest camelCaseWord ALLCAPS TitleCase'],
  ['code', 'function f(x) {\n\treturn x?.y ?? [1, 2];\n}\n// comment\n/* block */\nconst re = /\\s+/g;'],
  ['slashes and comments', '};\n//x\n}\n/// doc\n\r\n/'],
  ['JSON', '{"id":42,"name":"compactor","nested":{"list":[true,false,null]},"ratio":-0.125e3}'],
  ['base64', 'aGVsbG8gd29ybGQ=\nZXhhbXBsZSBiYXNlNjQgZGF0YQ==\n3q2+7w==/+AAAA'],
  ['special-token text', '<|endoftext|><|endofprompt|> <|fim_prefix|>x<|fim_middle|>y<|fim_suffix|>'],
  ['Unicode whitespace', 'a\u00a0b\u2003c\u3000d\u2028e\u2029f\u000bg\u000ch'],
  ['NEL (whitespace in tiktoken, not in JS)', 'a\u0085\nb \u0085{ x\u0085\u0085y'],
  ['BOM (whitespace in JS, not in tiktoken)', '\uFEFFhello x \uFEFF{  \uFEFF  x \uFEFF\n'],
  ['lone surrogates', 'a\ud800b \udc00 x\ud83d'],
  ['control characters', '\u0000\u0001\u001f\u007f\u0080\u009f'],
  ['zero-width', 'x\u200by\u200cz\u200dw\u2060'],
  ['mixed sample', sampleText(5_000, 7)],
];

const RUN_UNITS = [
  'a',
  'A',
  'aB',
  'ab',
  '=',
  '-',
  '0',
  ' ',
  '\n',
  '\r\n',
  'é',
  '日',
  '😀',
  'QUJD',
  '=-',
  ' a',
];
const RUN_LENGTHS = [1, 2, 3, 7, 8, 9, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 3000];

/** Units that meet at every interesting boundary of the split patterns. */
const TRICKY_UNIT = fc.constantFrom(
  ...['a', 'b', 'z', 'A', 'Z', 'é', 'É', 'ſ', 'ß', 'ǅ', 'ʰ', 'ا', '日', 'ー', 'e\u0301', '\u0301'],
  ...['0', '7', '١', '²', 'Ⅻ', "'", "'s", "'S", "'ll", "'re", "'d", 'ABC', 'abc', 'Abc'],
  ...[' ', '  ', '\t', '\n', '\r', '\r\n', '\u00a0', '\u3000', '\u0085', '\uFEFF', '\u000b', '\u2028'],
  ...[
    '.',
    ',',
    '/',
    '//',
    '{',
    '}',
    '(',
    '"',
    '-',
    '=',
    '_',
    '+',
    '…',
    '—',
    '🚀',
    '👍🏽',
    '\ud800',
    '<|endoftext|>',
  ],
);

describe.each(ENCODING_NAMES)('%s counts exactly as tiktoken', (encoding) => {
  const tokenizer = getTokenizer(encoding);

  it.each(TRICKY_TEXTS)('%s', async (_label, text) => {
    const expected = referenceCount(encoding, text);
    expect(tokenizer.countSync(text)).toBe(expected);
    await expect(tokenizer.count(text)).resolves.toBe(expected);
  });

  it.each(RUN_UNITS)('runs of %j up to 3,000 units', (unit) => {
    for (const length of RUN_LENGTHS) {
      const text = unit.repeat(length);
      expect({ length, tokens: tokenizer.countSync(text) }).toEqual({
        length,
        tokens: referenceCount(encoding, text),
      });
    }
  });

  it('random runs over a two-letter alphabet (long pieces, many ties)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'b', 'aa', 'ab'), minLength: 100, maxLength: 1500 }),
        (text) => {
          expect(tokenizer.countSync(text)).toBe(referenceCount(encoding, text));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('random text built from boundary-sensitive units', () => {
    fc.assert(
      fc.property(fc.string({ unit: TRICKY_UNIT, maxLength: 60 }), (text) => {
        expect(tokenizer.countSync(text)).toBe(referenceCount(encoding, text));
      }),
      { numRuns: 3000 },
    );
  });

  it('random Unicode text (any code point)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        expect(tokenizer.countSync(text)).toBe(referenceCount(encoding, text));
      }),
      { numRuns: 1000 },
    );
  });

  it('random printable graphemes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        expect(tokenizer.countSync(text)).toBe(referenceCount(encoding, text));
      }),
      { numRuns: 1000 },
    );
  });

  it('random ASCII, control characters included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 300 }), (text) => {
        expect(tokenizer.countSync(text)).toBe(referenceCount(encoding, text));
      }),
      { numRuns: 1000 },
    );
  });

  it('a large mixed sample, sync and async alike', async () => {
    const text = sampleText(300_000, 42);
    const expected = referenceCount(encoding, text);
    expect(tokenizer.countSync(text)).toBe(expected);
    await expect(tokenizer.count(text)).resolves.toBe(expected);
  });
});
