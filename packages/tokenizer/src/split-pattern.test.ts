import { describe, expect, it } from 'vitest';
import { ENCODING_NAMES, loadEncoding } from './encodings';
import { withRustWhitespace } from './split-pattern';

/** Unicode White_Space: what Rust's `\s` matches. */
const RUST_WHITESPACE = [
  ...'\t\n\u000b\u000c\r \u0085\u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000',
];
const NOT_WHITESPACE = ['a', '{', '\uFEFF', '\u200b', '\u180e', '1'];

function matchesWhole(pattern: string, text: string): boolean {
  return new RegExp(`^(?:${withRustWhitespace(pattern)})$`, 'u').test(text);
}

describe('withRustWhitespace', () => {
  it('makes \\s mean Unicode White_Space: U+0085 in, U+FEFF out', () => {
    for (const char of RUST_WHITESPACE) expect(matchesWhole('\\s', char)).toBe(true);
    for (const char of NOT_WHITESPACE) expect(matchesWhole('\\s', char)).toBe(false);
  });

  it('makes \\S its complement', () => {
    for (const char of RUST_WHITESPACE) expect(matchesWhole('\\S', char)).toBe(false);
    for (const char of NOT_WHITESPACE) expect(matchesWhole('\\S', char)).toBe(true);
  });

  it('rewrites \\s inside a negated class', () => {
    expect(matchesWhole('[^\\s\\p{L}]', '\uFEFF')).toBe(true);
    expect(matchesWhole('[^\\s\\p{L}]', '\u0085')).toBe(false);
    expect(matchesWhole('[^\\s\\p{L}]', 'a')).toBe(false);
  });

  it('leaves other escapes, properties and classes alone', () => {
    const pattern = "'s|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|\\]|[\\]x]|\\\\s";
    expect(withRustWhitespace(pattern)).toBe(pattern);
  });

  it('refuses \\S inside a class, which has no class-member spelling', () => {
    expect(() => withRustWhitespace('[\\S]')).toThrow(/\\S inside a character class/);
  });

  it.each(ENCODING_NAMES)('%s splits U+0085 and U+FEFF as tiktoken does', (name) => {
    const { splitPattern } = loadEncoding(name);
    expect(splitPattern).not.toMatch(/(?<!\\)\\[sS]/);
    const split = (text: string) => text.match(new RegExp(splitPattern, 'gu'));
    expect(split('x \u0085{')).toEqual(['x', ' ', '\u0085', '{']);
    expect(split('x \uFEFF{')).toEqual(['x', ' \uFEFF{']);
  });
});
