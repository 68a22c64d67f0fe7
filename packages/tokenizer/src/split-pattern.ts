/**
 * Turns an encoding's `pat_str` (as js-tiktoken ships it) into a JavaScript pattern that splits
 * text exactly as tiktoken's Rust regex does.
 *
 * The one difference that matters is `\s`. In Rust's regex crate `\s` is Unicode `White_Space`,
 * which includes U+0085 (NEXT LINE) and excludes U+FEFF (BYTE ORDER MARK); JavaScript's `\s` is
 * the other way round. js-tiktoken uses `pat_str` unchanged, so it disagrees with tiktoken on text
 * such as `"x \uFEFF{"` (4 tokens instead of 3), and a UTF-8 BOM is common in files that tools
 * read. We spell the Rust set out instead.
 */

/** Unicode `White_Space` (what Rust's `\s` means), written for a JavaScript character class. */
export const UNICODE_WHITE_SPACE = String.raw`\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000`;

/**
 * Rewrites every `\s` and `\S` of `patStr` to Unicode `White_Space` and its complement, leaving
 * everything else as written. Throws on a `\S` inside a character class, which has no
 * class-member spelling (neither encoding uses one).
 */
export function withRustWhitespace(patStr: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < patStr.length; i++) {
    const char = patStr[i];
    if (char === '\\') {
      const escaped = patStr[i + 1];
      i++;
      if (escaped === 's') {
        out += inClass ? UNICODE_WHITE_SPACE : `[${UNICODE_WHITE_SPACE}]`;
      } else if (escaped === 'S') {
        if (inClass) throw new Error(`cannot rewrite \\S inside a character class in ${patStr}`);
        out += `[^${UNICODE_WHITE_SPACE}]`;
      } else {
        out += `\\${escaped ?? ''}`;
      }
      continue;
    }
    if (char === '[' && !inClass) inClass = true;
    else if (char === ']' && inClass) inClass = false;
    out += char;
  }
  return out;
}
