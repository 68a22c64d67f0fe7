/**
 * Deterministic, varied text for tests: prose with contractions and capitals, numbers, code with
 * indentation and comments, JSON, CRLF lines, and non-Latin scripts, emoji and combining marks.
 */
import { prng } from '@compactor/testing/fixtures';

const WORDS = [
  'the',
  'context',
  'window',
  'model',
  "don't",
  "it's",
  "we'll",
  'Compaction',
  'SUMMARY',
  'tokens',
  'pruned',
  'tool',
  'output',
  'iPhone',
  'McDonald',
  'naïve',
  'café',
  'Straße',
  'über',
  'résumé',
  '日本語',
  'テキスト',
  '中文字符',
  'русский',
  'Ελληνικά',
  'العربية',
  'עברית',
  'हिन्दी',
  '한국어',
  'e\u0301',
  '🚀',
  '👩‍💻',
  '🇫🇷',
  'x\u200by',
  'ﬁ',
  'ſ',
  'Ⅻ',
  '²',
  '١٢٣',
];
const PUNCTUATION = ['.', ',', ';', ':', '!', '?', ' -', ' —', '...', '"', "'", '(', ')', ' / ', '…'];
const CODE_LINES = [
  'export function countTokens(text: string): number {',
  '  const pieces = text.match(/\\s+|\\w+/g) ?? [];',
  '  return pieces.reduce((sum, p) => sum + p.length, 0); // why: cheap estimate',
  '}',
  '\tif (x !== null && y >= 0x1F) { return [1, 2, 3]; }',
  '    {"id": 42, "name": "compactor", "tags": ["a", "b"], "ok": true, "ratio": 0.125}',
  'SELECT id, seq FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT 100;',
  '/* block comment */ #include <stdio.h> int main(void) { printf("%d\\n", 1 << 3); }',
  '    aGVsbG8gd29ybGQ=  ZXhhbXBsZSBiYXNlNjQgZGF0YQ==  3q2+7w==',
  '<|endoftext|> <|fim_prefix|> <|endofprompt|>',
];

/** About `length` characters (cut at exactly `length`) of mixed sample text. */
export function sampleText(length: number, seed = 1): string {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const chunks: string[] = [];
  let size = 0;
  while (size < length) {
    let chunk: string;
    const kind = random();
    if (kind < 0.25) {
      chunk = `${pick(CODE_LINES)}${random() < 0.2 ? '\r\n' : '\n'}`;
    } else if (kind < 0.3) {
      chunk = `${'\n'.repeat(1 + Math.floor(random() * 3))}${' '.repeat(Math.floor(random() * 6))}`;
    } else if (kind < 0.35) {
      chunk = ` ${Math.floor(random() * 1e7)}${random() < 0.5 ? '.' + Math.floor(random() * 100) : ''}`;
    } else {
      const word = pick(WORDS);
      chunk = `${random() < 0.85 ? ' ' : ''}${random() < 0.1 ? word.toUpperCase() : word}`;
      if (random() < 0.12) chunk += pick(PUNCTUATION);
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return chunks.join('').slice(0, length);
}
