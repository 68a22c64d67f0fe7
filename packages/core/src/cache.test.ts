import { describe, expect, it } from 'vitest';
import { cacheEffect, isCacheWarm, pruneWorthTheCache, resolveCacheModel, type CacheModel } from './cache';

const sonnet = resolveCacheModel('claude-sonnet-4-5');
const gpt4o = resolveCacheModel('gpt-4o');

describe('resolveCacheModel', () => {
  it.each([
    [
      'anthropic/claude-sonnet-4-5-20250929',
      'explicit',
      { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
    ],
    ['gpt-4o-2024-08-06', 'automatic', { input: 2.5, output: 10, cacheRead: 1.25, cacheWrite: 2.5 }],
    ['my-local-model', 'automatic', null],
  ] as const)('%s: %s cache, list prices', (id, kind, pricing) => {
    const model = resolveCacheModel(id);
    expect(model.cache).toEqual({ kind, ttlSeconds: 300 });
    expect(model.pricing).toEqual(pricing);
  });

  it('takes the session’s pricing and cache behaviour over the catalog’s, each whole', () => {
    const pricing = { input: 1, output: 2, cacheRead: 0.5, cacheWrite: 1 };
    expect(resolveCacheModel('claude-sonnet-4-5', { pricing })).toEqual({
      pricing,
      cache: { kind: 'explicit', ttlSeconds: 300 },
    });
    expect(
      resolveCacheModel('gpt-4o', { cache: { kind: 'explicit', ttlSeconds: 3600 }, pricing: null }),
    ).toEqual({
      pricing: gpt4o.pricing,
      cache: { kind: 'explicit', ttlSeconds: 3600 },
    });
  });
});

describe('isCacheWarm', () => {
  const at = new Date('2026-01-01T00:00:00Z');
  const later = (seconds: number) => new Date(at.getTime() + seconds * 1000);
  it.each([
    [299, true],
    [300, false],
    [-1, false],
  ])('a report %i s old: %s', (age, warm) => {
    expect(isCacheWarm(at, later(age), { kind: 'explicit', ttlSeconds: 300 })).toBe(warm);
  });
  it('is cold without any usage report, and always without a cache', () => {
    expect(isCacheWarm(null, at, { kind: 'automatic', ttlSeconds: 300 })).toBe(false);
    expect(isCacheWarm(at, later(1), { kind: 'none', ttlSeconds: 300 })).toBe(false);
  });
});

describe('cacheEffect (hand-computed; prices in USD per 1M tokens)', () => {
  // A prune on a warm 100,000-token prompt: the first cleared output sits after 20,000 tokens and
  // 25,000 tokens go. Sonnet: the next prompt reads 20,000 at 0.3 and writes 55,000 at 3.75
  // ($0.21225) instead of reading 100,000 at 0.3 ($0.03); later turns read 25,000 fewer at 0.3.
  const prune = {
    tokensBefore: 100_000,
    tokensAfter: 75_000,
    unchangedPrefixTokens: 20_000,
    cachedTokens: 100_000,
  };

  it.each<[string, Parameters<typeof cacheEffect>[0], CacheModel, ReturnType<typeof cacheEffect>]>([
    [
      'prune, warm, explicit cache',
      { ...prune, cacheWarm: true },
      sonnet,
      { invalidatedTokens: 80_000, rewriteCostUsd: 0.18225, savingPerTurnUsd: 0.0075, breakEvenTurns: 25 },
    ],
    // gpt-4o writes at the input price: 20,000 × 1.25 + 55,000 × 2.5 = 162,500 against
    // 100,000 × 1.25 = 125,000; later turns save 25,000 × 1.25.
    [
      'prune, warm, automatic cache',
      { ...prune, cacheWarm: true },
      gpt4o,
      { invalidatedTokens: 80_000, rewriteCostUsd: 0.0375, savingPerTurnUsd: 0.03125, breakEvenTurns: 2 },
    ],
    // Expired: both prompts are written whole, and the smaller one costs less at once.
    [
      'prune, cold cache',
      { ...prune, cacheWarm: false },
      sonnet,
      { invalidatedTokens: 0, rewriteCostUsd: 0, savingPerTurnUsd: 0.0075, breakEvenTurns: 0 },
    ],
    // A compaction keeps only the 5,000-token system prompt of a 150,000-token prompt, 140,000
    // of them cached: 5,000 × 0.3 + 25,000 × 3.75 = 95,250 against 140,000 × 0.3 + 10,000 ×
    // 3.75 = 79,500; later turns read 120,000 fewer at 0.3 (36,000).
    [
      'compaction, warm, explicit cache',
      {
        tokensBefore: 150_000,
        tokensAfter: 30_000,
        unchangedPrefixTokens: 5_000,
        cachedTokens: 140_000,
        cacheWarm: true,
      },
      sonnet,
      { invalidatedTokens: 135_000, rewriteCostUsd: 0.01575, savingPerTurnUsd: 0.036, breakEvenTurns: 1 },
    ],
    [
      'unknown prices',
      { ...prune, cacheWarm: true },
      resolveCacheModel('my-local-model'),
      { invalidatedTokens: 80_000, rewriteCostUsd: null, savingPerTurnUsd: null, breakEvenTurns: null },
    ],
    [
      'no cache: every token at the input price',
      {
        tokensBefore: 10_000,
        tokensAfter: 8_000,
        unchangedPrefixTokens: 0,
        cachedTokens: 10_000,
        cacheWarm: true,
      },
      {
        pricing: { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25 },
        cache: { kind: 'none', ttlSeconds: 300 },
      },
      { invalidatedTokens: 0, rewriteCostUsd: 0, savingPerTurnUsd: 0.002, breakEvenTurns: 0 },
    ],
    // Cached tokens beyond the prompt (a report larger than the context) count as the prompt.
    [
      'a change that removes nothing never breaks even',
      {
        tokensBefore: 10_000,
        tokensAfter: 10_000,
        unchangedPrefixTokens: 2_000,
        cachedTokens: 50_000,
        cacheWarm: true,
      },
      sonnet,
      { invalidatedTokens: 8_000, rewriteCostUsd: 0.0276, savingPerTurnUsd: 0, breakEvenTurns: null },
    ],
  ])('%s', (_name, change, model, expected) => {
    expect(cacheEffect(change, model)).toEqual(expected);
  });
});

describe('pruneWorthTheCache', () => {
  const effect = (breakEvenTurns: number | null, invalidatedTokens = 1_000) => ({
    invalidatedTokens,
    rewriteCostUsd: 1,
    savingPerTurnUsd: 0.1,
    breakEvenTurns,
  });
  it.each([
    ['repaid within the horizon', effect(10), true],
    ['repaid after it', effect(11), false],
    ['never repaid', effect(null), false],
    ['nothing cached is broken', effect(null, 0), true],
  ])('%s', (_name, e, worth) => {
    expect(pruneWorthTheCache(e, 10)).toBe(worth);
  });
  it('runs when prices are unknown', () => {
    expect(
      pruneWorthTheCache(
        { invalidatedTokens: 5, rewriteCostUsd: null, savingPerTurnUsd: null, breakEvenTurns: null },
        10,
      ),
    ).toBe(true);
  });
});
