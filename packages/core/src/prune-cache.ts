/**
 * Whether a finished turn's prune is worth the provider's prompt cache it breaks (policy
 * `pruning.cacheAware`), decided from the sums the status statement already has: the history is
 * never loaded on the append path. A prune that waits is not lost: every compaction prunes first.
 */
import {
  cacheEffect,
  isCacheWarm,
  pruneWorthTheCache,
  type CacheEffect,
  type CacheModel,
  type ContextChange,
} from './cache';
import type { Usage } from './model';
import type { PruneBudgets, PruningPolicy } from './policy';
import type { UnprunedOutputs } from './prune';

/** Whether after-turn prunes weigh the cache: as the policy says, or (null) when the model has prices and a cache. */
export function isCacheAwarePruning(pruning: Pick<PruningPolicy, 'cacheAware'>, model: CacheModel): boolean {
  return pruning.cacheAware ?? (model.pricing !== null && model.cache.kind !== 'none');
}

/**
 * The most a prune can clear, in output tokens: the candidates are the outputs from the one that
 * crosses `protectTokens` on, so they sum to less than `total - protectTokens + largest`, and
 * never more than `total` (the bound core `pruneCouldSelect` uses). The upper bound, so that a
 * prune waits only when even its largest possible saving does not repay the cache; the markers
 * that replace the outputs are left out, which keeps it an upper bound.
 */
export function pruneSavingBound(
  pruning: Pick<PruneBudgets, 'protectTokens'>,
  outputs: UnprunedOutputs,
): number {
  return Math.max(0, Math.min(outputs.total, outputs.total - pruning.protectTokens + outputs.largest));
}

/** What the append path knows when a finished turn could prune. */
export interface TurnPruneCacheInputs {
  pruning: PruningPolicy;
  model: CacheModel;
  /** The served context's estimated tokens now (the status's `tokens`). */
  contextTokens: number;
  /** The view's unpruned completed outputs (db context stats). */
  unprunedOutputs: UnprunedOutputs;
  /**
   * Tokens at the start of the prompt that no prune touches: pinned system messages and the
   * latest summary. A lower bound on the prefix a prune keeps, so the cache it breaks is not
   * underestimated.
   */
  untouchedPrefixTokens: number;
  /** The newest usage report and when its message was stored; null without one. */
  lastReport: { usage: Pick<Usage, 'cacheRead' | 'cacheWrite'>; at: Date } | null;
  now: Date;
  /**
   * The served context's tokens at which the auto trigger compacts (its point, plus the pinned
   * tokens a `tokens` trigger leaves out), or null when it cannot fire or was not evaluated.
   */
  compactionTriggerTokens?: number | null;
}

/** A finished turn's prune: run it or let it wait, and the cache effect weighed (null when not weighed). */
export type TurnPruneCacheDecision =
  { run: true; effect: CacheEffect | null } | { run: false; effect: CacheEffect };

/** The context change a turn's prune would make, at its largest possible saving. */
export function turnPruneChange(
  inputs: Omit<TurnPruneCacheInputs, 'pruning'> & { pruning: PruneBudgets },
): ContextChange {
  const tokensBefore = Math.max(0, inputs.contextTokens);
  const saving = pruneSavingBound(inputs.pruning, inputs.unprunedOutputs);
  const report = inputs.lastReport;
  return {
    tokensBefore,
    tokensAfter: Math.max(0, tokensBefore - saving),
    unchangedPrefixTokens: Math.min(tokensBefore, Math.max(0, inputs.untouchedPrefixTokens)),
    cachedTokens: report ? report.usage.cacheRead + report.usage.cacheWrite : 0,
    cacheWarm: isCacheWarm(report?.at ?? null, inputs.now, inputs.model.cache),
  };
}

/**
 * Runs the prune unless cache awareness applies and the prune does not pay for the warm cache it
 * breaks within `cacheHorizonTurns` (core `pruneWorthTheCache`: a cold cache or one without
 * prices always runs it). Near the trigger it runs whatever the cache: when the context is
 * within the prune's saving of the point where the trigger compacts, the outputs a waiting prune
 * keeps are what brings the compaction on, and a compaction breaks the cache anyway, and more of
 * it (from the boundary on), besides a summarizer call and the agent's wait.
 */
export function turnPruneCacheDecision(inputs: TurnPruneCacheInputs): TurnPruneCacheDecision {
  if (!isCacheAwarePruning(inputs.pruning, inputs.model)) return { run: true, effect: null };
  const change = turnPruneChange(inputs);
  const effect = cacheEffect(change, inputs.model);
  if (pruneWorthTheCache(effect, inputs.pruning.cacheHorizonTurns)) return { run: true, effect };
  const trigger = inputs.compactionTriggerTokens ?? null;
  const saving = change.tokensBefore - change.tokensAfter;
  if (trigger !== null && saving > 0 && change.tokensBefore + saving >= trigger) return { run: true, effect };
  return { run: false, effect };
}
