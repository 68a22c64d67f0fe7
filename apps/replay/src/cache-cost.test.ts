import { describe, expect, it } from 'vitest';
import { resolveCacheModel, type CacheModel } from '@compactor/core';
import { simulatePromptCache, type ModelCall } from './cache-cost';

const call = (blocks: [string, number][], output: number, at: number | null = null): ModelCall => ({
  prompt: blocks.map(([key, tokens]) => ({ key, tokens })),
  output,
  at,
});

// claude-sonnet-4-5: input 3, output 15, cache read 0.3, cache write 3.75 USD per 1M; explicit, 5 min.
const sonnet = resolveCacheModel('claude-sonnet-4-5');
const automatic: CacheModel = {
  pricing: { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2 },
  cache: { kind: 'automatic', ttlSeconds: 300 },
};

describe('simulatePromptCache', () => {
  it('reads the shared prefix and writes the rest (explicit cache, consecutive calls)', () => {
    const cost = simulatePromptCache(
      [
        call(
          [
            ['a', 100],
            ['b', 200],
          ],
          10,
        ),
        call(
          [
            ['a', 100],
            ['b', 200],
            ['c', 50],
          ],
          20,
        ),
        // `b` pruned: its rendering changed, so the prefix breaks there.
        call(
          [
            ['a', 100],
            ["b'", 20],
            ['c', 50],
            ['d', 30],
          ],
          5,
        ),
      ],
      sonnet,
    );
    expect(cost).toEqual({
      calls: 3,
      ttlFrom: 'consecutive',
      promptTokens: 850,
      uncachedTokens: 0,
      cacheReadTokens: 400,
      cacheWriteTokens: 450,
      outputTokens: 35,
      uncachedUsd: 0,
      cacheReadUsd: 0.00012,
      cacheWriteUsd: 0.0016875,
      outputUsd: 0.000525,
      totalUsd: 0.0023325,
      noCacheUsd: 0.003075,
    });
  });

  it('checks the TTL against timestamps; an automatic cache sends what it misses uncached', () => {
    const cost = simulatePromptCache(
      [
        call([['a', 1000]], 100, 0),
        call(
          [
            ['a', 1000],
            ['b', 500],
          ],
          100,
          200_000,
        ),
        // 301 s after the previous call: the prefix expired.
        call(
          [
            ['a', 1000],
            ['b', 500],
            ['c', 100],
          ],
          100,
          501_000,
        ),
      ],
      automatic,
    );
    expect(cost).toMatchObject({
      ttlFrom: 'timestamps',
      promptTokens: 4100,
      uncachedTokens: 3100,
      cacheReadTokens: 1000,
      cacheWriteTokens: 0,
      outputTokens: 300,
      uncachedUsd: 0.0062,
      cacheReadUsd: 0.0005,
      cacheWriteUsd: 0,
      outputUsd: 0.0024,
      totalUsd: 0.0091,
      noCacheUsd: 0.0106,
    });
  });

  it('a new summary keeps only the blocks before it', () => {
    const cost = simulatePromptCache(
      [
        call(
          [
            ['sys', 50],
            ['m1', 400],
            ['m2', 400],
            ['m3', 400],
          ],
          0,
        ),
        call(
          [
            ['sys', 50],
            ['summary', 100],
            ['m3', 400],
          ],
          0,
        ),
      ],
      sonnet,
    );
    expect(cost).toMatchObject({ cacheReadTokens: 50, cacheWriteTokens: 1250 + 500 });
  });

  it('without timestamps on every call, consecutive calls count as within the TTL', () => {
    const cost = simulatePromptCache([call([['a', 10]], 0, 0), call([['a', 10]], 0, null)], sonnet);
    expect(cost).toMatchObject({ ttlFrom: 'consecutive', cacheReadTokens: 10, cacheWriteTokens: 10 });
  });

  it('no cache: every prompt token is uncached; unknown prices leave the USD null', () => {
    const cost = simulatePromptCache(
      [
        call([['a', 10]], 1),
        call(
          [
            ['a', 10],
            ['b', 5],
          ],
          1,
        ),
      ],
      {
        pricing: null,
        cache: { kind: 'none', ttlSeconds: 300 },
      },
    );
    expect(cost).toMatchObject({
      promptTokens: 25,
      uncachedTokens: 25,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      uncachedUsd: null,
      totalUsd: null,
      noCacheUsd: null,
    });
  });

  it('no calls cost nothing', () => {
    expect(simulatePromptCache([], sonnet)).toMatchObject({ calls: 0, promptTokens: 0, totalUsd: 0 });
  });
});
