import { turnPruneCacheDecision, type TriggerVerdict } from '@compactor/core';
import { safeErrorMessage, sessionCacheModel, type SessionRow } from '@compactor/db';
import type { TurnPruneView } from '@compactor/contract';
import type { OperationLog, SessionResources } from './resources';
import type { StatusSnapshot } from './status';
import type { TenantLimits } from './tenant-limits';

/**
 * A finished turn's prune, once its budgets could select something (core `pruneCouldSelect`):
 * queued, or, when the policy weighs the prompt cache (`pruning.cacheAware`) and the prune would
 * not repay the warm cache it breaks, left to wait (`skipped: cache_warm`, a `prune.skipped`
 * event and a metric), unless the context is within its saving of the auto trigger's point
 * (`verdict`: a compaction there costs more than the cache). Decided from the status statement's
 * sums: no history is read. A prune that waits is not lost: the next one re-selects over the
 * whole view, and every compaction prunes first. A failure to queue or announce is logged, never the write's failure.
 */
export async function turnPrune(
  resources: SessionResources,
  limits: TenantLimits,
  session: SessionRow,
  snapshot: Pick<StatusSnapshot, 'stats' | 'policy' | 'status'>,
  verdict: TriggerVerdict | null,
  log: OperationLog,
): Promise<TurnPruneView> {
  const { stats, policy } = snapshot;
  const report = stats.report;
  const decision = turnPruneCacheDecision({
    pruning: policy.pruning,
    model: sessionCacheModel(session),
    contextTokens: snapshot.status.tokens,
    unprunedOutputs: stats.unprunedOutputs,
    untouchedPrefixTokens: stats.pinnedTokens + stats.summaryTokens,
    lastReport: report ? { usage: report.usage, at: report.createdAt } : null,
    now: resources.clock(),
    compactionTriggerTokens: compactionTriggerTokens(verdict, stats.pinnedTokens),
  });
  if (!decision.run) {
    const skipped = { jobId: null, skipped: 'cache_warm' as const, cache: decision.effect };
    limits.pruneSkipped('cache_warm');
    try {
      await resources.jobs.pruneSkipped(session, { reason: 'cache_warm', cache: decision.effect });
    } catch (error) {
      log.warn(
        { sessionId: session.id, err: safeErrorMessage(error) },
        'prune.skipped could not be announced',
      );
    }
    return skipped;
  }
  try {
    return await resources.jobs.startPrune(session, 'turn');
  } catch (error) {
    log.warn({ sessionId: session.id, err: safeErrorMessage(error) }, 'turn prune could not be started');
    return null;
  }
}

/** The trigger's point in the served context's tokens: a `tokens` trigger leaves pinned messages out. */
function compactionTriggerTokens(verdict: TriggerVerdict | null, pinnedTokens: number): number | null {
  if (verdict?.threshold == null) return null;
  return verdict.threshold + (verdict.trigger === 'tokens' ? pinnedTokens : 0);
}
