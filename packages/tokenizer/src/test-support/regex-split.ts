import { loadEncoding, type EncodingName } from '../encodings';
import { UNASSIGNED_IN_REFERENCE } from '../reference-unicode';

/** Code points Node's Unicode assigns and tiktoken's does not (reference-unicode.ts). */
const NEWER_THAN_REFERENCE = new RegExp(
  `[${UNASSIGNED_IN_REFERENCE.map(([first, last]) => `\\u{${first.toString(16)}}-\\u{${last.toString(16)}}`).join('')}]`,
  'gu',
);

const patterns = new Map<EncodingName, RegExp>();

/**
 * The pieces the encoding's split pattern (the splitters' definition) cuts `text` into, where
 * code points newer than tiktoken's Unicode count as the unassigned code points they are there:
 * the regex splits the text with each of them replaced by an unassigned stand-in of the same
 * length, and its pieces' lengths cut the text.
 */
export function regexPieces(encoding: EncodingName, text: string): string[] {
  let pattern = patterns.get(encoding);
  if (!pattern) {
    pattern = new RegExp(loadEncoding(encoding).splitPattern, 'gu');
    patterns.set(encoding, pattern);
  }
  const standIns = text.replace(NEWER_THAN_REFERENCE, (char) => (char.length === 2 ? '\u{E0080}' : '\u0378'));
  let start = 0;
  return (standIns.match(pattern) ?? []).map((piece) => text.slice(start, (start += piece.length)));
}
