/**
 * Recall's words: what a part is found by and what a query looks for, computed by Compactor on
 * both sides instead of by Postgres's text-search parser. The parser was most of a compaction's
 * Postgres CPU (its flag update computes the words of every part the boundary passes); the words
 * now arrive as a tsvector literal, which Postgres reads in a fraction of that time (db
 * `markRecallableBehind`). A document and a query go through the same {@link recallWords}, so a
 * word a query names is spelled as the index holds it, whatever the text around it.
 *
 * A word is a run of Unicode letters and digits (with the marks that follow them), lower-cased:
 * `src/parser.ts` is `src parser ts`, `foo-bar` and `foo_bar` are `foo bar`, `ana@exämple.org`
 * is `ana exämple org`. Punctuation, symbols, NUL and lone surrogates separate words.
 */

/** Characters (code points) of a part's text that are indexed: as the index always did. */
export const RECALL_WORDS_CHARS = 100_000;

/**
 * Longest word indexed, in UTF-8 bytes: Postgres refuses a longer lexeme in a tsvector or tsquery
 * (2,047 bytes), so a longer run (a base64 blob) is left out on both sides.
 */
export const RECALL_WORD_MAX_BYTES = 2_047;

/** Positions Postgres keeps: 1 to 16,383 (later words share the last), 256 per word. */
const MAX_POSITION = 16_383;
const MAX_POSITIONS_PER_WORD = 256;

/**
 * Text without a non-ASCII character, most tool output, is read in one regex pass: irregexp
 * compiles it to machine code on first use, so a worker's first compactions do not wait for the
 * JIT (about 140 M characters a second). Other text is scanned character by character: ASCII
 * from a table, other code points by Unicode property, remembered (about 90 M characters a
 * second warm, twice a Unicode regex's speed). Both find the same words in ASCII text.
 */
const ASCII_WORD = /[a-z0-9]+/g;
const NON_ASCII = /[\u0080-\uffff]/;

/** What a character is to a word: a separator, a letter or digit, or a mark (inside a word only). */
const SEPARATOR = 0;
const LETTER = 1;
const MARK = 2;
const ASCII_CLASS = Uint8Array.from({ length: 128 }, (_, code) =>
  /[0-9a-z]/i.test(String.fromCharCode(code)) ? LETTER : SEPARATOR,
);
/**
 * Classes of the Basic Multilingual Plane's code points as found (UNKNOWN until then): a typed
 * array's read instead of a Map's lookup for every non-ASCII character (real sessions' words about
 * 6% faster); astral code points, rare, stay in a bounded Map.
 */
const UNKNOWN = 255;
const bmpClasses = new Uint8Array(0x10000).fill(UNKNOWN);
const astralClasses = new Map<number, number>();
function classOf(codePoint: number): number {
  if (codePoint < 0x10000) {
    const known = bmpClasses[codePoint]!;
    if (known !== UNKNOWN) return known;
    return (bmpClasses[codePoint] = classifiedAs(codePoint));
  }
  let known = astralClasses.get(codePoint);
  if (known === undefined) {
    known = classifiedAs(codePoint);
    if (astralClasses.size < 65_536) astralClasses.set(codePoint, known);
  }
  return known;
}
function classifiedAs(codePoint: number): number {
  const char = String.fromCodePoint(codePoint);
  return /[\p{L}\p{N}]/u.test(char) ? LETTER : /\p{M}/u.test(char) ? MARK : SEPARATOR;
}

/** The words of lower-cased text with non-ASCII characters: runs of letters and digits, marks inside. */
function scanWords(lower: string): string[] {
  const words: string[] = [];
  const units = codeUnitsOf(lower);
  const length = units.length;
  let start = -1;
  for (let i = 0; i < length;) {
    const code = units[i]!;
    let kind: number;
    let width = 1;
    if (code < 0x80) kind = ASCII_CLASS[code]!;
    else {
      // As `codePointAt`: a surrogate pair is one code point, a lone surrogate its own.
      const low = i + 1 < length ? units[i + 1]! : 0;
      const codePoint =
        code >= 0xd800 && code <= 0xdbff && low >= 0xdc00 && low <= 0xdfff
          ? (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000
          : code;
      // A lone surrogate is its own code point here: not a letter, so it separates.
      width = codePoint > 0xffff ? 2 : 1;
      kind = classOf(codePoint);
    }
    if (start === -1) {
      if (kind === LETTER) start = i;
    } else if (kind === SEPARATOR) {
      words.push(lower.slice(start, i));
      start = -1;
    }
    i += width;
  }
  if (start !== -1) words.push(lower.slice(start));
  return words;
}

/**
 * A text's UTF-16 code units as a typed array, for {@link scanWords} to index instead of calling
 * `charCodeAt`/`codePointAt`: once a module in the process subclasses `String` (ioredis's
 * `VerbatimString`, loaded in every worker), V8's `charCodeAt` runs several times slower, a typed
 * array's indexing does not (as tokenizer `codeUnitsOf`; real sessions' texts, their vectors: 80
 * ms instead of 89 with ioredis loaded, 83 instead of 103 with a `String` subclass of one's own).
 */
function codeUnitsOf(text: string): Uint16Array {
  const bytes = Buffer.from(text, 'utf16le');
  if (bytes.byteOffset % 2 === 0) return new Uint16Array(bytes.buffer, bytes.byteOffset, text.length);
  // Buffer's pool aligns its slices to 8 bytes; a misaligned one is copied, never reinterpreted.
  return new Uint16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

/** The first `max` code points of `text` (as Postgres's `left` counts), cut in one slice. */
export function firstCodePoints(text: string, max: number): string {
  if (text.length <= max) return text;
  let units = 0;
  for (let points = 0; points < max && units < text.length; points++) {
    const code = text.charCodeAt(units);
    const low = units + 1 < text.length ? text.charCodeAt(units + 1) : 0;
    units += code >= 0xd800 && code <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
  }
  return text.slice(0, units);
}

/** UTF-8 bytes of a word, counted only when it could be too long. */
function tooLong(word: string): boolean {
  if (word.length * 3 <= RECALL_WORD_MAX_BYTES) return false;
  let bytes = 0;
  for (let i = 0; i < word.length; i++) {
    const code = word.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes > RECALL_WORD_MAX_BYTES;
}

/** The words of `text` in order, lower-cased, its first {@link RECALL_WORDS_CHARS} characters. */
export function recallWords(text: string): string[] {
  const lower = firstCodePoints(text, RECALL_WORDS_CHARS).toLowerCase();
  const words = NON_ASCII.test(lower) ? scanWords(lower) : (lower.match(ASCII_WORD) ?? []);
  return words.some(tooLong) ? words.filter((word) => !tooLong(word)) : words;
}

/** A lexeme as tsvector and tsquery input spell it: quoted, quotes and backslashes doubled. */
function quoted(word: string): string {
  return /['\\]/.test(word) ? `'${word.replace(/['\\]/g, (c) => (c === "'" ? "''" : '\\\\'))}'` : `'${word}'`;
}

/**
 * The words of `text` with their positions as a tsvector literal (`'word':1,4 'other':2`), as
 * Postgres would store them: positions from 1, capped at 16,383, at most 256 a word. The empty
 * text is the empty literal (the empty tsvector).
 */
export function recallVectorOf(text: string): string {
  const positions = new Map<string, number[]>();
  let position = 0;
  for (const word of recallWords(text)) {
    position = Math.min(position + 1, MAX_POSITION);
    const seen = positions.get(word);
    if (seen === undefined) positions.set(word, [position]);
    else if (seen.length < MAX_POSITIONS_PER_WORD && seen[seen.length - 1] !== position) seen.push(position);
  }
  let literal = '';
  for (const [word, at] of positions)
    literal += `${literal === '' ? '' : ' '}${quoted(word)}:${at.join(',')}`;
  return literal;
}

/** A query as {@link recallQueryOf} reads it. */
export interface RecallQuery {
  /** A tsquery literal: `'a' & 'b' <-> 'c' | !'d'`. */
  tsquery: string;
  /** The words the query looks for (not those it excludes), in order, for an excerpt's start. */
  words: string[];
}

/** One operand of a query: its words (a phrase when more than one), negated or not. */
interface Operand {
  words: string[];
  negated: boolean;
}

/**
 * A websearch-style query (as Postgres's `websearch_to_tsquery`) in recall's words: terms all
 * present, `"a phrase"` and a term of several words (`src/parser.ts`, `foo-bar`) as a phrase,
 * `or` between terms, `-term` excluded. Null when nothing is left to look for or exclude.
 */
export function recallQueryOf(query: string): RecallQuery | null {
  const groups: Operand[][] = [[]];
  let i = 0;
  while (i < query.length) {
    const char = query[i]!;
    if (/\s/.test(char)) {
      i++;
      continue;
    }
    const negated = char === '-' && i + 1 < query.length && !/\s/.test(query[i + 1]!);
    if (negated) i++;
    let text: string;
    if (query[i] === '"') {
      const end = query.indexOf('"', i + 1);
      text = query.slice(i + 1, end === -1 ? query.length : end);
      i = end === -1 ? query.length : end + 1;
    } else {
      const start = i;
      while (i < query.length && query[i] !== '"' && !/\s/.test(query[i]!)) i++;
      text = query.slice(start, i);
      if (!negated && text.toLowerCase() === 'or') {
        if (groups[groups.length - 1]!.length > 0) groups.push([]);
        continue;
      }
    }
    const words = recallWords(text);
    if (words.length > 0) groups[groups.length - 1]!.push({ words, negated });
  }
  const spelled = groups
    .filter((group) => group.length > 0)
    .map((group) => group.map(operandOf).join(' & '))
    .join(' | ');
  if (spelled === '') return null;
  return { tsquery: spelled, words: groups.flat().flatMap((o) => (o.negated ? [] : o.words)) };
}

function operandOf({ words, negated }: Operand): string {
  const phrase = words.map(quoted).join(' <-> ');
  if (!negated) return phrase;
  return words.length === 1 ? `!${phrase}` : `!(${phrase})`;
}
