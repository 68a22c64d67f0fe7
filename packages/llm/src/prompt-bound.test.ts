import { estimateTokens } from '@compactor/core';
import { getTokenizer } from '@compactor/tokenizer';
import { describe, expect, it } from 'vitest';
import { countPromptTokens, promptTokenBound } from './summarize';

/** Text that tokenizers find hard: CJK, emoji, combining marks, long runs, odd whitespace. */
function hostileText(seed: number, length: number): string {
  const alphabet = [
    'a',
    'Z',
    ' ',
    '\n',
    '\t',
    '漢',
    '字',
    '😀',
    'é',
    'e\u0301',
    '0',
    '9',
    '{',
    '"',
    '\u00a0',
    'ß',
    '🇺🇸',
  ];
  let state = seed;
  let out = '';
  while (out.length < length) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const piece = alphabet[state % alphabet.length]!;
    out += state % 7 === 0 ? piece.repeat(1 + (state % 300)) : piece;
  }
  return out;
}

describe('promptTokenBound', () => {
  it.each(['o200k_base', 'cl100k_base'] as const)(
    'is never below the exact %s count of the prompt (every token covers a byte)',
    async (encoding) => {
      const tokenizer = getTokenizer(encoding);
      const count = (text: string) => tokenizer.count(text);
      for (let seed = 1; seed <= 40; seed++) {
        const prompt = { system: hostileText(seed, 200), user: hostileText(seed + 1_000, 5_000) };
        expect(promptTokenBound(prompt)).toBeGreaterThanOrEqual(await countPromptTokens(prompt, count));
      }
    },
  );

  it('is never below the character estimate either', async () => {
    const prompt = { system: hostileText(3, 300), user: hostileText(4, 9_000) };
    const count = async (text: string) => estimateTokens(text);
    expect(promptTokenBound(prompt)).toBeGreaterThanOrEqual(await countPromptTokens(prompt, count));
  });
});
