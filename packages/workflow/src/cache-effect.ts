import { cacheEffect, isCacheWarm, type CacheEffect } from '@compactor/core';
import { sessionCacheModel, type CacheBaseline, type SessionRow } from '@compactor/db';

/** A change to the served context: its sizes and the tokens at its head it left alone. */
export interface ServedChange {
  tokensBefore: number;
  tokensAfter: number;
  unchangedPrefixTokens: number;
}

/**
 * What a change costs in prompt cache, priced with the session's cache model: what the provider
 * holds is the view's latest usage report (read before the change), alive while younger than the
 * model's cache TTL by the workflow's clock.
 */
export function cacheEffectOfChange(
  session: SessionRow,
  baseline: Pick<CacheBaseline, 'lastUsage'>,
  change: ServedChange,
  now: Date,
): CacheEffect {
  const model = sessionCacheModel(session);
  const usage = baseline.lastUsage;
  return cacheEffect(
    {
      ...change,
      cachedTokens: usage?.cachedTokens ?? 0,
      cacheWarm: isCacheWarm(usage?.at ?? null, now, model.cache),
    },
    model,
  );
}
