/**
 * What the provider's prompt cache makes a change to the served context cost.
 *
 * Providers cache a prompt's prefix: the next request reads the part it shares with the last one
 * at a discount (cache reads) and pays to store the rest (cache writes). Pruning an output or
 * moving the boundary changes the prompt from that position on, so everything after it is written
 * again at the next turn; in exchange every later turn reads fewer tokens. This module prices both
 * sides so a prune can be weighed against the cache it breaks, and every compaction can report
 * what it cost in cache (docs/DESIGN.md, "Prompt cache").
 */
import type { CacheBehaviour, ModelPricing } from './model';
import { lookupKnownModel } from './model-catalog';

export type { CacheBehaviour, ModelPricing } from './model';

/** A session's cache model: its prices (null when unknown: no cost is guessed) and cache behaviour. */
export interface CacheModel {
  pricing: ModelPricing | null;
  cache: CacheBehaviour;
}

/** Five minutes: Anthropic's default cache lifetime, and OpenAI's minimum for an idle prefix. */
export const DEFAULT_CACHE_TTL_SECONDS = 300;

/** Sessions whose model is unknown: prompts are assumed cached the common way, prices unknown. */
const UNKNOWN_MODEL_CACHE: CacheBehaviour = { kind: 'automatic', ttlSeconds: DEFAULT_CACHE_TTL_SECONDS };

/**
 * Overrides a session states (`model.pricing`, `model.cache`): each replaces the catalog's value
 * whole; a null or missing one keeps it.
 */
export interface CacheModelOverrides {
  pricing?: ModelPricing | null | undefined;
  cache?: CacheBehaviour | null | undefined;
}

/** The catalog's cache model for a model id, completed by the session's overrides. */
export function resolveCacheModel(modelId: string, overrides: CacheModelOverrides = {}): CacheModel {
  const known = lookupKnownModel(modelId);
  return {
    pricing: overrides.pricing ?? known?.pricing ?? null,
    cache: overrides.cache ?? known?.cache ?? UNKNOWN_MODEL_CACHE,
  };
}

/**
 * Whether the provider still holds the prefix: a usage report (the last model call) less than the
 * TTL ago. Without any report nothing was cached.
 */
export function isCacheWarm(lastUsageAt: Date | null, now: Date, cache: CacheBehaviour): boolean {
  if (cache.kind === 'none' || lastUsageAt === null) return false;
  const ageMs = now.getTime() - lastUsageAt.getTime();
  return ageMs >= 0 && ageMs < cache.ttlSeconds * 1000;
}

/** A change to the served context, measured in tokens of the prompt it serves. */
export interface ContextChange {
  /** The served context's tokens before the change. */
  tokensBefore: number;
  /** Its tokens after. */
  tokensAfter: number;
  /** Tokens before the first position the change touched: the prefix both prompts share. */
  unchangedPrefixTokens: number;
  /**
   * Prompt tokens the provider holds for this session: the last usage report's `cacheRead +
   * cacheWrite` (what it read from and stored in its cache), 0 when it reported none.
   */
  cachedTokens: number;
  /** Whether that cache is still alive ({@link isCacheWarm}). */
  cacheWarm: boolean;
}

/** What a change costs in cache: recorded on every prune and compaction. */
export interface CacheEffect {
  /** Cached tokens the next prompt no longer reads from the cache. */
  invalidatedTokens: number;
  /** What the next turn's prompt costs more because of the change (USD; null without prices). */
  rewriteCostUsd: number | null;
  /** What every later turn's prompt costs less, the context being smaller (USD; null without prices). */
  savingPerTurnUsd: number | null;
  /** Turns until the saving repays the rewrite: 0 when nothing is rewritten at a cost, null when never. */
  breakEvenTurns: number | null;
}

/** USD rounded to a millionth of a cent: enough for sums, free of float noise in stored rows. */
function usd(microDollarsTimesTokens: number): number {
  return Math.round((microDollarsTimesTokens / 1_000_000) * 1e8) / 1e8;
}

/**
 * The cache effect of a change. The next prompt reads from the cache what is still cached of the
 * shared prefix and writes the rest; without the change it would have read every cached token
 * and written only what was not cached. Later turns read the whole (smaller) prompt from the
 * cache either way, so each saves the removed tokens at the read price. Without a cache
 * (`kind: none`) reads and writes cost the input price.
 */
export function cacheEffect(change: ContextChange, model: CacheModel): CacheEffect {
  const before = Math.max(0, change.tokensBefore);
  const after = Math.max(0, change.tokensAfter);
  const live =
    change.cacheWarm && model.cache.kind !== 'none' ? Math.min(Math.max(0, change.cachedTokens), before) : 0;
  const keptCached = Math.min(live, Math.max(0, change.unchangedPrefixTokens));
  const invalidatedTokens = live - keptCached;
  const pricing = model.pricing;
  if (pricing === null) {
    return { invalidatedTokens, rewriteCostUsd: null, savingPerTurnUsd: null, breakEvenTurns: null };
  }
  const cached = model.cache.kind === 'none' ? pricing.input : pricing.cacheRead;
  const written = model.cache.kind === 'none' ? pricing.input : pricing.cacheWrite;
  const unchangedPrompt = live * cached + (before - live) * written;
  const changedPrompt = keptCached * cached + Math.max(0, after - keptCached) * written;
  const rewrite = Math.max(0, changedPrompt - unchangedPrompt);
  const saving = Math.max(0, (before - after) * cached);
  return {
    invalidatedTokens,
    rewriteCostUsd: usd(rewrite),
    savingPerTurnUsd: usd(saving),
    breakEvenTurns: rewrite === 0 ? 0 : saving > 0 ? Math.ceil(rewrite / saving) : null,
  };
}

/**
 * Whether a prune pays for the cache it breaks within `horizonTurns`: it does when the cache has
 * expired anyway (nothing is invalidated), when it breaks nothing at a cost, or when its saving
 * repays the rewrite within the horizon. Without prices there is nothing to weigh: it runs.
 */
export function pruneWorthTheCache(effect: CacheEffect, horizonTurns: number): boolean {
  if (effect.invalidatedTokens === 0 || effect.rewriteCostUsd === null) return true;
  return effect.breakEvenTurns !== null && effect.breakEvenTurns <= horizonTurns;
}
