/**
 * Hand-written pre-tokenizers that agree with the encodings' split patterns on ASCII text, and
 * say "ask the Unicode splitter" (return -1) as soon as a non-ASCII character could change the
 * answer.
 *
 * Why: most text (code, JSON, logs, English) is ASCII, and a 128-entry class table indexed by
 * char code is the cheapest way to split it: several times faster than the split regex, and
 * faster than classifying code points (unicode-splitter.ts). The regex stays the definition:
 * tests compare both splits on random text (ascii-splitter.test.ts).
 *
 * Both patterns, read for ASCII input (W = whitespace, O = neither whitespace, letter nor digit):
 *
 * | o200k_base                                    | cl100k_base                                |
 * |-----------------------------------------------|--------------------------------------------|
 * |                                               | `'s 't 're 've 'm 'll 'd` (any case)       |
 * | `[^\r\n L N]? [A-Z]*[a-z]+ 'contraction?`     | `[^\r\n L N]? [A-Za-z]+`                   |
 * | `[^\r\n L N]? [A-Z]+[a-z]* 'contraction?`     |                                            |
 * | `\d{1,3}`                                     | `\d{1,3}`                                  |
 * | ` ?O+[\r\n/]*`                                | ` ?O+[\r\n]*`                              |
 * | `W*[\r\n]+` · `W+(?!\S)` · `W+`               | the same                                   |
 */
import type { EncodingName } from './encodings';

/** A text as its UTF-16 code units (code-units.ts). */
type Units = Uint16Array;

const LOWER = 1;
const UPPER = 2;
const DIGIT = 4;
const SPACE = 8; // whitespace other than \r and \n
const NEWLINE = 16; // \r or \n
const OTHER = 32; // punctuation, symbols, control characters: what `[^\s\p{L}\p{N}]` matches
/** Any char of 128 and above: only the Unicode splitter knows its class. */
const NON_ASCII = 64;
/** Past the end of the text. */
const END_OF_TEXT = 0;
const LETTER = LOWER | UPPER;
const WHITESPACE = SPACE | NEWLINE;
/** What may stand before a letter run: `[^\r\n\p{L}\p{N}]`. */
const LETTER_PREFIX = SPACE | OTHER;

const ASCII_CLASS = new Uint8Array(128).map((_, code) => {
  const char = String.fromCharCode(code);
  if (/[a-z]/.test(char)) return LOWER;
  if (/[A-Z]/.test(char)) return UPPER;
  if (/[0-9]/.test(char)) return DIGIT;
  if (char === '\r' || char === '\n') return NEWLINE;
  if (/[\t\v\f ]/.test(char)) return SPACE;
  return OTHER;
});

/** Class of the char at `index`: one bit (none past the end), so `classAt(…) & LETTER` is safe. */
function classAt(text: Units, index: number): number {
  if (index >= text.length) return END_OF_TEXT;
  const code = text[index]!;
  return code < 128 ? ASCII_CLASS[code]! : NON_ASCII;
}

const APOSTROPHE = 39;

/** The code unit at `index`, or -1 past the end (as `charCodeAt`'s NaN did, it matches no char). */
function unitAt(text: Units, index: number): number {
  return index < text.length ? text[index]! : -1;
}

/** End of a contraction (`'s`, `'ll`, … in any case) starting at `index`, or `index` if none. */
function unitsContractionEnd(text: Units, index: number): number {
  if (unitAt(text, index) !== APOSTROPHE) return index;
  const second = unitAt(text, index + 1) | 0x20; // lowercase an ASCII letter; past the end → -1
  if (second === 0x73 || second === 0x74 || second === 0x6d || second === 0x64) return index + 2; // s t m d
  const third = unitAt(text, index + 2) | 0x20;
  if ((second === 0x72 || second === 0x76) && third === 0x65) return index + 3; // re ve
  if (second === 0x6c && third === 0x6c) return index + 3; // ll
  return index;
}

/** End of `[\r\n]*` (or `[\r\n/]*` with `slash`) from `index`. Non-ASCII simply ends it. */
function unitsTrailingNewlinesEnd(text: Units, index: number, slash: boolean): number {
  for (;;) {
    const code = unitAt(text, index);
    if (code === 10 || code === 13 || (slash && code === 47)) index++;
    else return index;
  }
}

/** {@link unitsContractionEnd} in a string (the Unicode splitter's). */
export function contractionEnd(text: string, index: number): number {
  if (text.charCodeAt(index) !== APOSTROPHE) return index;
  const second = text.charCodeAt(index + 1) | 0x20; // lowercase an ASCII letter; NaN → 0x20
  if (second === 0x73 || second === 0x74 || second === 0x6d || second === 0x64) return index + 2; // s t m d
  const third = text.charCodeAt(index + 2) | 0x20;
  if ((second === 0x72 || second === 0x76) && third === 0x65) return index + 3; // re ve
  if (second === 0x6c && third === 0x6c) return index + 3; // ll
  return index;
}

/** {@link unitsTrailingNewlinesEnd} in a string (the Unicode splitter's). */
export function trailingNewlinesEnd(text: string, index: number, slash: boolean): number {
  for (;;) {
    const code = text.charCodeAt(index);
    if (code === 10 || code === 13 || (slash && code === 47)) index++;
    else return index;
  }
}

/**
 * The part common to both encodings after the letter and contraction rules: digits, the
 * punctuation run, and the three whitespace rules. `start`'s class is `startClass` (ASCII).
 */
function nonLetterPieceEnd(
  text: Units,
  start: number,
  startClass: number,
  slashAfterPunctuation: boolean,
): number {
  if (startClass === DIGIT) {
    let end = start + 1;
    while (end < start + 3 && classAt(text, end) === DIGIT) end++;
    // Fewer than three digits may continue with a non-ASCII digit (١, ²) that the regex counts.
    return end < start + 3 && classAt(text, end) === NON_ASCII ? -1 : end;
  }

  // ` ?O+[\r\n]*`: a space may lead a punctuation run.
  const runStart = unitAt(text, start) === 32 && classAt(text, start + 1) === OTHER ? start + 1 : start;
  if (classAt(text, runStart) === OTHER) {
    let end = runStart + 1;
    let endClass: number;
    while ((endClass = classAt(text, end)) === OTHER) end++;
    if (endClass === NON_ASCII) return -1; // "—", "…", emoji and most of Unicode continue the run
    return unitsTrailingNewlinesEnd(text, end, slashAfterPunctuation);
  }

  // Whitespace: find the whole run, which Unicode whitespace could extend.
  let runEnd = start;
  let lastNewline = -1;
  let runClass: number;
  while ((runClass = classAt(text, runEnd)) & WHITESPACE) {
    if (runClass === NEWLINE) lastNewline = runEnd;
    runEnd++;
  }
  if (runClass === NON_ASCII) return -1;
  if (lastNewline >= 0) return lastNewline + 1; // `\s*[\r\n]+`
  if (runEnd === text.length) return runEnd; // `\s+(?!\S)` at the end of the text
  return runEnd - start >= 2 ? runEnd - 1 : runEnd; // `\s+(?!\S)` leaves the last one; else `\s+`
}

/** o200k_base's split of the ASCII text at `start`: the piece's end, or -1 to defer. */
function o200kPieceEnd(text: Units, start: number): number {
  const startClass = classAt(text, start);
  if (startClass === NON_ASCII) return -1;
  let letters = start;
  if (startClass & LETTER_PREFIX) {
    const nextClass = classAt(text, start + 1);
    if (nextClass === NON_ASCII) return -1;
    if (nextClass & LETTER) letters = start + 1;
  }
  if (!(classAt(text, letters) & LETTER)) return nonLetterPieceEnd(text, start, startClass, true);

  // `[A-Z]*[a-z]+` or else `[A-Z]+[a-z]*`: either way, the uppercase run then the lowercase run.
  let end = letters;
  while (classAt(text, end) === UPPER) end++;
  let endClass: number;
  while ((endClass = classAt(text, end)) === LOWER) end++;
  if (endClass === NON_ASCII) return -1; // a non-ASCII letter or mark may extend the piece
  return unitsContractionEnd(text, end);
}

/** cl100k_base's split of the ASCII text at `start`: the piece's end, or -1 to defer. */
function cl100kPieceEnd(text: Units, start: number): number {
  const startClass = classAt(text, start);
  if (startClass === NON_ASCII) return -1;
  const contraction = unitsContractionEnd(text, start);
  if (contraction > start) return contraction;
  let letters = start;
  if (startClass & LETTER_PREFIX) {
    const nextClass = classAt(text, start + 1);
    if (nextClass === NON_ASCII) return -1;
    if (nextClass & LETTER) letters = start + 1;
  }
  if (!(classAt(text, letters) & LETTER)) return nonLetterPieceEnd(text, start, startClass, false);

  let end = letters;
  let endClass: number;
  while ((endClass = classAt(text, end)) & LETTER) end++;
  return endClass === NON_ASCII ? -1 : end;
}

/**
 * Finds where the piece starting at `start` ends, or returns -1 when only the Unicode splitter
 * can tell. It reads the text's code units (code-units.ts), not the string.
 */
export type AsciiSplitter = (text: Units, start: number) => number;

/** The ASCII pre-tokenizer of `encoding`. */
export function asciiSplitterFor(encoding: EncodingName): AsciiSplitter {
  return encoding === 'o200k_base' ? o200kPieceEnd : cl100kPieceEnd;
}
