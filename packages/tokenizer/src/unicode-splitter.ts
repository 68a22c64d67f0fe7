/**
 * Hand-written pre-tokenizers for any text: where the encoding's split pattern ends the piece
 * that starts at a given index, found in one pass over code points, without a regex.
 *
 * Why not the regex: V8's backtracking engine records a backtrack entry for every char a `[…]*`
 * or `[…]+` consumes when the class holds astral code points (it cannot step back by a fixed
 * width), and both patterns' letter and punctuation classes do. A run of a few million combining
 * marks, ideographs, symbols or private-use chars overflows that stack ("Maximum call stack size
 * exceeded"), and the count would throw. This scanner uses constant stack, and its time is
 * linear: a piece's alternatives scan the run it starts on a bounded number of times, and a
 * piece that ends inside that run (o200k_base's `ʰ|ÀÀ`, whitespace up to its last newline)
 * leaves a rest that the next piece takes to the run's end.
 *
 * The regex stays the definition: `unicode-splitter.test.ts` compares both splits on random text
 * of every Unicode category and pins the pattern strings this file implements. One exception:
 * code points Node's Unicode knows and tiktoken's does not are classified as tiktoken's tables
 * classify them, unassigned (reference-unicode.ts). The comments on
 * each alternative say why the scan finds the same end as backtracking would.
 *
 * Both patterns, in the regexes' order (P = `[^\r\n\p{L}\p{N}]`, O = `[^\s\p{L}\p{N}]`, C = the
 * optional `'s 't 're 've 'm 'll 'd` contraction in any case):
 *
 * | o200k_base                                              | cl100k_base                 |
 * |---------------------------------------------------------|-----------------------------|
 * |                                                         | C (not optional)            |
 * | `P?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+C?` | `P?\p{L}+`         |
 * | `P?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*C?` |                    |
 * | `\p{N}{1,3}`                                            | `\p{N}{1,3}`                |
 * | ` ?O+[\r\n/]*`                                          | ` ?O+[\r\n]*`               |
 * | `\s*[\r\n]+` · `\s+(?!\S)` · `\s+`                      | the same                    |
 */
import { contractionEnd, trailingNewlinesEnd } from './ascii-splitter';
import type { EncodingName } from './encodings';
import { unassignedInReference } from './reference-unicode';
import { UNICODE_WHITE_SPACE } from './split-pattern';

/** In o200k_base's first letter run, `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`. */
const UPPER_RUN = 1;
/** In o200k_base's second letter run, `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`. */
const LOWER_RUN = 2;
const LETTER = 4;
const NUMBER = 8;
/** Unicode White_Space, what Rust's `\s` means (see split-pattern.ts). */
const WHITESPACE = 16;
/** `\r` or `\n`. */
const NEWLINE = 32;
/** Set on every classified code point, so that 0 means "not classified yet" or "past the end". */
const CLASSIFIED = 128;
const END_OF_TEXT = 0;

/** The patterns' own classes, spelled as they spell them, so Node's ICU decides both alike. */
const CLASS_TESTS: ReadonlyArray<readonly [bit: number, test: RegExp]> = [
  [UPPER_RUN, /^[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]$/u],
  [LOWER_RUN, /^[\p{Ll}\p{Lm}\p{Lo}\p{M}]$/u],
  [LETTER, /^\p{L}$/u],
  [NUMBER, /^\p{N}$/u],
  [WHITESPACE, new RegExp(`^[${UNICODE_WHITE_SPACE}]$`, 'u')],
  [NEWLINE, /^[\r\n]$/u],
];

/**
 * Class bits per code point, filled on first sight (six regex tests, ~1 µs) and read in place
 * afterwards. A pure function's memo, shared process-wide like the rank tables: 1.1 MB, and a
 * lone surrogate classifies as none of the classes, as it does under the `u` flag.
 */
const codePointClasses = new Uint8Array(0x110000);

function classOf(codePoint: number): number {
  const known = codePointClasses[codePoint]!;
  return known !== 0 ? known : classify(codePoint);
}

function classify(codePoint: number): number {
  const char = String.fromCodePoint(codePoint);
  let bits = CLASSIFIED;
  // A code point newer than tiktoken's Unicode is in none of the classes there (reference-unicode.ts).
  if (!unassignedInReference(codePoint))
    for (const [bit, test] of CLASS_TESTS) if (test.test(char)) bits |= bit;
  codePointClasses[codePoint] = bits;
  return bits;
}

/**
 * The code point at `index` (< text.length); a lone surrogate stands for itself. By hand
 * because `String.prototype.codePointAt` is slow on lone surrogates: a run of them scanned
 * 1.6× slower with it.
 */
function codePointAt(text: string, index: number): number {
  const code = text.charCodeAt(index);
  if ((code & 0xfc00) !== 0xd800) return code;
  const low = text.charCodeAt(index + 1); // NaN past the end, which is no low surrogate
  return (low & 0xfc00) === 0xdc00 ? ((code - 0xd800) << 10) + (low - 0xdc00) + 0x10000 : code;
}

/** Class of the code point at `index`, or END_OF_TEXT (in no class) past the end. */
function classAt(text: string, index: number): number {
  return index < text.length ? classOf(codePointAt(text, index)) : END_OF_TEXT;
}

/** UTF-16 units of the code point at `index` (a lone surrogate is one). */
function widthAt(text: string, index: number): number {
  return codePointAt(text, index) > 0xffff ? 2 : 1;
}

/** `[^\r\n\p{L}\p{N}]`: what may stand before a letter run. */
function isLetterPrefix(bits: number): boolean {
  return bits !== END_OF_TEXT && (bits & (NEWLINE | LETTER | NUMBER)) === 0;
}

/** `[^\s\p{L}\p{N}]`: punctuation, symbols, marks, controls, format chars, unassigned, surrogates. */
function isOther(bits: number): boolean {
  return bits !== END_OF_TEXT && (bits & (WHITESPACE | LETTER | NUMBER)) === 0;
}

/** End of the run from `from` of code points whose class has exactly `want` under `mask`. */
function runEnd(text: string, from: number, mask: number, want: number): number {
  let index = from;
  while (index < text.length) {
    const codePoint = codePointAt(text, index);
    if ((classOf(codePoint) & mask) !== want) break;
    index += codePoint > 0xffff ? 2 : 1;
  }
  return index;
}

/**
 * `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` at `from`: its end, or -1.
 *
 * The star first takes the whole upper run. If the char after it can start the plus, the plus
 * takes the whole lower run from there. Otherwise the star gives back one char at a time, so the
 * plus starts at the last char of the upper run that is also in the lower class; the char after
 * that one is in neither class (or ends the run), so the plus takes it alone.
 */
function upperThenLowerEnd(text: string, from: number): number {
  let index = from;
  let lastLowerEnd = -1;
  while (index < text.length) {
    const codePoint = codePointAt(text, index);
    const bits = classOf(codePoint);
    if (!(bits & UPPER_RUN)) break;
    index += codePoint > 0xffff ? 2 : 1;
    if (bits & LOWER_RUN) lastLowerEnd = index;
  }
  if (classAt(text, index) & LOWER_RUN) return runEnd(text, index, LOWER_RUN, LOWER_RUN);
  return lastLowerEnd;
}

/**
 * `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` at `from`: its end, or -1. Nothing
 * after the plus can fail, so the first (greedy) choice is the match.
 */
function upperRunThenLowerEnd(text: string, from: number): number {
  if (!(classAt(text, from) & UPPER_RUN)) return -1;
  return runEnd(text, runEnd(text, from, UPPER_RUN, UPPER_RUN), LOWER_RUN, LOWER_RUN);
}

/** Both patterns after their letter alternatives: digits, the punctuation run, whitespace. */
function nonLetterPieceEnd(
  text: string,
  start: number,
  first: number,
  slashAfterPunctuation: boolean,
): number {
  if (first & NUMBER) {
    let end = start;
    for (let digits = 0; digits < 3 && classAt(text, end) & NUMBER; digits++) end += widthAt(text, end);
    return end;
  }

  // ` ?O+`: the optional space is tried first; without it, O+ cannot start on the space.
  const runStart = text.charCodeAt(start) === 32 ? start + 1 : start;
  if (isOther(classAt(text, runStart))) {
    const end = runEnd(text, runStart, WHITESPACE | LETTER | NUMBER, 0);
    return trailingNewlinesEnd(text, end, slashAfterPunctuation);
  }

  // Only whitespace is left. `\s*[\r\n]+`: the star gives back until the plus can start, so the
  // piece ends after the run's last newline. Else `\s+(?!\S)` leaves the run's last char to the
  // piece after it (unless the text ends, or the run is one char); else `\s+`.
  let end = start;
  let lastNewline = -1;
  for (let bits: number; (bits = classAt(text, end)) & WHITESPACE; end++) {
    if (bits & NEWLINE) lastNewline = end;
  }
  if (end === start) throw new Error(`no split alternative matches at offset ${start}`); // unreachable
  if (lastNewline >= 0) return lastNewline + 1;
  if (end === text.length) return end;
  return end - start >= 2 ? end - 1 : end;
}

/**
 * o200k_base: the end of the piece at `start`. The two letter alternatives are tried in the
 * regex's order, each with the optional prefix taken, then without it.
 */
function o200kPieceEnd(text: string, start: number): number {
  const first = classAt(text, start);
  const prefixed = isLetterPrefix(first);
  const afterPrefix = start + widthAt(text, start);
  let end = prefixed ? upperThenLowerEnd(text, afterPrefix) : -1;
  if (end < 0) end = upperThenLowerEnd(text, start);
  if (end < 0 && prefixed) end = upperRunThenLowerEnd(text, afterPrefix);
  if (end < 0) end = upperRunThenLowerEnd(text, start);
  if (end >= 0) return contractionEnd(text, end);
  return nonLetterPieceEnd(text, start, first, true);
}

/** cl100k_base: the end of the piece at `start`. */
function cl100kPieceEnd(text: string, start: number): number {
  const contraction = contractionEnd(text, start);
  if (contraction > start) return contraction;
  const first = classAt(text, start);
  if (isLetterPrefix(first)) {
    const afterPrefix = start + widthAt(text, start);
    if (classAt(text, afterPrefix) & LETTER) return runEnd(text, afterPrefix, LETTER, LETTER);
  } else if (first & LETTER) {
    return runEnd(text, start, LETTER, LETTER);
  }
  return nonLetterPieceEnd(text, start, first, false);
}

/** Finds where the piece starting at `start` (< text.length) ends; always past `start`. */
export type UnicodeSplitter = (text: string, start: number) => number;

/** The pre-tokenizer of `encoding` for any text. */
export function unicodeSplitterFor(encoding: EncodingName): UnicodeSplitter {
  return encoding === 'o200k_base' ? o200kPieceEnd : cl100kPieceEnd;
}
