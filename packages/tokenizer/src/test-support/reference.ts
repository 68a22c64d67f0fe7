import { get_encoding, type Tiktoken } from 'tiktoken';
import type { EncodingName } from '../encodings';

// tiktoken's own Rust implementation (compiled to WASM): the ground truth every count is checked
// against. js-tiktoken is not, as it splits U+0085 and U+FEFF differently (see split-pattern.ts).
const references = new Map<EncodingName, Tiktoken>();

/**
 * Tokens in `text` according to tiktoken, special-token text counted as ordinary text. Quadratic
 * on long pieces: keep runs without whitespace to a few thousand characters.
 */
export function referenceCount(encoding: EncodingName, text: string): number {
  let reference = references.get(encoding);
  if (!reference) {
    reference = get_encoding(encoding);
    references.set(encoding, reference);
  }
  return reference.encode(text, [], []).length;
}

/** Whether tiktoken's `encoding` ends the tokens of `text` with the one token `_A`. */
function endsWithUnderscoreA(encoding: EncodingName, text: string): boolean {
  referenceCount(encoding, '');
  const reference = references.get(encoding)!;
  const ids = reference.encode(text, [], []);
  const last = reference.decode_single_token_bytes(ids[ids.length - 1]!);
  return Buffer.from(last).toString('latin1') === '_A';
}

/**
 * The code points Node's Unicode assigns as letters, numbers or marks that tiktoken's regex
 * tables leave unassigned, as inclusive ranges, found by asking tiktoken itself. A letter or
 * number X is a piece of its own before `_A` (cl100k_base: `\p{L}+` or `\p{N}{1,3}`, then
 * `[^\r\n\p{L}\p{N}]?\p{L}+` takes `_A`), an unassigned one joins the underscore (` ?O+`), so
 * `_A` is no token of its own; a mark after `a` stays in o200k_base's letter run, an unassigned
 * one again joins the underscore. About a second for the 150,000 code points.
 */
export function codePointsUnassignedInReference(): Array<[first: number, last: number]> {
  const letterOrNumber = /^[\p{L}\p{N}]$/u;
  const mark = /^\p{M}$/u;
  const ranges: Array<[number, number]> = [];
  for (let codePoint = 0; codePoint <= 0x10ffff; codePoint++) {
    if (codePoint >= 0xd800 && codePoint <= 0xdfff) continue;
    const char = String.fromCodePoint(codePoint);
    const known = letterOrNumber.test(char)
      ? endsWithUnderscoreA('cl100k_base', `${char}_A`)
      : mark.test(char)
        ? endsWithUnderscoreA('o200k_base', `a${char}_A`)
        : true;
    if (known) continue;
    const last = ranges.at(-1);
    if (last && last[1] === codePoint - 1) last[1] = codePoint;
    else ranges.push([codePoint, codePoint]);
  }
  return ranges;
}
