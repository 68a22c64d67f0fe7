import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loadEncoding, parseBpeRanks } from './encodings';

describe('parseBpeRanks', () => {
  it('gives consecutive ranks from each line offset, decoding every token into one byte array', () => {
    const packed = parseBpeRanks('! 0 YQ== Yg==\n! 5 YWI= w6k= //79\n');
    expect([...packed.bytes]).toEqual([0x61, 0x62, 0x61, 0x62, 0xc3, 0xa9, 0xff, 0xfe, 0xfd]);
    expect([...packed.tokenStarts]).toEqual([0, 1, 2, 4, 6, 9]);
    expect([...packed.ranks]).toEqual([0, 1, 5, 6, 7]);
  });

  it('decodes every token of the real files as atob does', () => {
    const ranks = (createRequire(import.meta.url)('js-tiktoken/ranks/cl100k_base') as { bpe_ranks: string })
      .bpe_ranks;
    const expected = ranks.split('\n').flatMap((line) => line.split(' ').slice(2));
    const { bytes, tokenStarts } = parseBpeRanks(ranks);
    expect(tokenStarts.length - 1).toBe(expected.length);
    expected.forEach((base64, i) => {
      const decoded = String.fromCharCode(...bytes.subarray(tokenStarts[i], tokenStarts[i + 1]));
      if (decoded !== atob(base64)) expect({ i, decoded }).toEqual({ i, decoded: atob(base64) });
    });
  });

  it('rejects a line that is not in the format', () => {
    expect(() => parseBpeRanks('? 0 YQ==')).toThrow(/malformed rank line/);
    expect(() => parseBpeRanks('! x YQ==')).toThrow(/malformed rank line/);
    expect(() => parseBpeRanks('! 0 YQ==  Yg==')).toThrow(/malformed rank line/);
    expect(() => parseBpeRanks('! 0 Y*==')).toThrow(/malformed rank line/);
  });
});

describe('loadEncoding', () => {
  it.each([
    ['o200k_base', 199_998],
    ['cl100k_base', 100_256],
  ] as const)('%s has every token, all 256 single bytes among them', (name, tokens) => {
    const encoding = loadEncoding(name);
    expect(encoding.ranks.size).toBe(tokens);
    for (let byte = 0; byte < 256; byte++) {
      expect(encoding.ranks.rankOf(String.fromCharCode(byte), 0, 1)).toBeLessThan(tokens);
    }
    expect(encoding.ranks.maxTokenBytes).toBeGreaterThanOrEqual(64);
    expect(encoding.ranks.maxTokenBytes).toBeLessThan(256);
  });

  it('parses once and returns the same tables afterwards', () => {
    expect(loadEncoding('cl100k_base')).toBe(loadEncoding('cl100k_base'));
  });
});
