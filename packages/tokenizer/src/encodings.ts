import { createRequire } from 'node:module';
import { RankTable, type PackedTokens } from './rank-table';
import { withRustWhitespace } from './split-pattern';

/** The byte-pair encodings this package counts with. */
export type EncodingName = 'o200k_base' | 'cl100k_base';

/** Every supported encoding, default first. */
export const ENCODING_NAMES: readonly EncodingName[] = ['o200k_base', 'cl100k_base'];

/** An encoding ready to count with: its rank table and its split pattern. */
export interface LoadedEncoding {
  readonly name: EncodingName;
  readonly ranks: RankTable;
  /**
   * Pre-tokenization pattern (tiktoken's, with Rust's `\s`): the definition the splitters
   * implement by hand and are tested against (compile it with the `u` flag).
   */
  readonly splitPattern: string;
}

/** Shape of js-tiktoken's rank modules. */
interface RankFile {
  pat_str: string;
  special_tokens: Record<string, number>;
  bpe_ranks: string;
}

// The rank modules are plain data (1–2.3 MB of text); requiring them only when an encoding is
// first used keeps them out of processes that never count tokens.
const requireRankFile = createRequire(import.meta.url) as (id: string) => RankFile;

const RANK_MODULES: Record<EncodingName, string> = {
  o200k_base: 'js-tiktoken/ranks/o200k_base',
  cl100k_base: 'js-tiktoken/ranks/cl100k_base',
};

// Immutable once built (~10 MB for o200k_base), so built at most once per process and shared.
const loadedEncodings = new Map<EncodingName, LoadedEncoding>();

/** The encoding's tables, parsed on first use (o200k_base: ~65 ms) and cached. */
export function loadEncoding(name: EncodingName): LoadedEncoding {
  const cached = loadedEncodings.get(name);
  if (cached) return cached;
  const file = requireRankFile(RANK_MODULES[name]);
  const encoding: LoadedEncoding = {
    name,
    ranks: new RankTable(parseBpeRanks(file.bpe_ranks)),
    splitPattern: withRustWhitespace(file.pat_str),
  };
  loadedEncodings.set(name, encoding);
  return encoding;
}

const BASE64_VALUES = new Int8Array(128).fill(-1);
[...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].forEach((char, value) => {
  BASE64_VALUES[char.charCodeAt(0)] = value;
});
const NEWLINE = 10;
const SPACE = 32;
const EQUALS = 61;

/**
 * Parses js-tiktoken's compressed rank format: lines of `! <first rank> <base64 token> ...`, the
 * tokens of a line having consecutive ranks from the first. Decodes straight into one byte array
 * (no string per token), which is faster than atob and leaves no garbage to collect.
 */
export function parseBpeRanks(bpeRanks: string): PackedTokens {
  const length = bpeRanks.length;
  // Each token takes at least 4 base64 chars and a separator; 4 chars decode to at most 3 bytes.
  const bytes = new Uint8Array(Math.ceil((length * 3) / 4));
  const tokenStarts = new Int32Array(Math.ceil(length / 5) + 2);
  const ranks = new Int32Array(Math.ceil(length / 5) + 1);
  let tokens = 0;
  let byteCount = 0;
  let i = 0;
  const malformed = (): Error => {
    const lineStart = bpeRanks.lastIndexOf('\n', i) + 1;
    return new Error(
      `malformed rank line starting ${JSON.stringify(bpeRanks.slice(lineStart, lineStart + 40))}`,
    );
  };

  while (i < length) {
    if (bpeRanks.charCodeAt(i) === NEWLINE) {
      i++;
      continue;
    }
    if (bpeRanks.charCodeAt(i) !== 33 || bpeRanks.charCodeAt(i + 1) !== SPACE) throw malformed(); // "! "
    i += 2;
    let rank = 0;
    const digitsStart = i;
    for (let code = bpeRanks.charCodeAt(i); code >= 48 && code <= 57; code = bpeRanks.charCodeAt(++i)) {
      rank = rank * 10 + code - 48;
    }
    if (i === digitsStart || bpeRanks.charCodeAt(i) !== SPACE) throw malformed();
    i++;

    while (i < length && bpeRanks.charCodeAt(i) !== NEWLINE) {
      let bits = 0;
      let bitCount = 0;
      const tokenStart = i;
      for (
        let code = bpeRanks.charCodeAt(i);
        i < length && code !== SPACE && code !== NEWLINE;
        code = bpeRanks.charCodeAt(++i)
      ) {
        if (code === EQUALS) continue;
        const value = code < 128 ? BASE64_VALUES[code]! : -1;
        if (value < 0) throw malformed();
        bits = ((bits << 6) | value) & 0xffffff;
        bitCount += 6;
        if (bitCount >= 8) {
          bitCount -= 8;
          bytes[byteCount++] = (bits >>> bitCount) & 0xff;
        }
      }
      if (i === tokenStart) throw malformed(); // two separators in a row
      ranks[tokens] = rank++;
      tokenStarts[++tokens] = byteCount;
      if (bpeRanks.charCodeAt(i) === SPACE) i++;
    }
  }
  return {
    bytes: bytes.slice(0, byteCount),
    tokenStarts: tokenStarts.slice(0, tokens + 1),
    ranks: ranks.slice(0, tokens),
  };
}
