import { describe, expect, it } from 'vitest';
import type { CompactionRow } from '@compactor/db';
import type { JobQueues } from '@compactor/queue';
import { createWorkerMetrics } from './metrics';

const noQueues = { queue: () => ({ getJobCounts: async () => ({}) }) } as unknown as JobQueues;

/** A `compaction.ended` worker event, with the fields the metrics read of the compaction. */
const ended = (fields: Partial<CompactionRow>) => ({
  compaction: {
    reason: 'auto',
    strategy: 'summarize',
    status: 'completed',
    prunedTokens: 0,
    tokensBefore: 10_000,
    tokensAfter: 2_000,
    fallbackCode: null,
    cacheInvalidatedTokens: null,
    cacheRewriteCostUsd: null,
    cacheSavingPerTurnUsd: null,
    cacheBreakEvenTurns: null,
    ...fields,
  } as CompactionRow,
});

describe('worker metrics', () => {
  it('count the compactions the truncate fallback completed, by failure code', async () => {
    const metrics = createWorkerMetrics(noQueues, { active: () => 0, queued: () => 0 });
    metrics.compactionEnded(ended({}));
    metrics.compactionEnded(ended({ fallbackCode: 'llm_retries_exhausted' }));
    metrics.compactionEnded(ended({ fallbackCode: 'llm_retries_exhausted' }));
    metrics.compactionEnded(ended({ fallbackCode: 'invalid_summary' }));

    const fallbacks = await metrics.registry.getSingleMetric('compactor_compaction_fallbacks_total')!.get();
    expect(fallbacks.values.map((v) => [v.labels.code, v.value])).toEqual([
      ['llm_retries_exhausted', 2],
      ['invalid_summary', 1],
    ]);
    // The strategy stays the one asked for: the fallback is its own label set, not a strategy.
    const compactions = await metrics.registry.getSingleMetric('compactor_compactions_total')!.get();
    expect(compactions.values).toEqual([
      { labels: { reason: 'auto', strategy: 'summarize', status: 'completed' }, value: 4 },
    ]);
  });

  it('count the cached prompt tokens compactions and prune jobs invalidated, and the rewrite cost', async () => {
    const metrics = createWorkerMetrics(noQueues, { active: () => 0, queued: () => 0 });
    metrics.compactionEnded(ended({ cacheInvalidatedTokens: 12_500, cacheRewriteCostUsd: 0.000375 }));
    metrics.compactionEnded(ended({ cacheInvalidatedTokens: 500, cacheRewriteCostUsd: null }));
    metrics.compactionEnded(ended({}));
    const cache = {
      invalidatedTokens: 6_450,
      rewriteCostUsd: 0.01105125,
      savingPerTurnUsd: 0.0008961,
      breakEvenTurns: 13,
    };
    void metrics.pruneEnded({ outcome: { parts: 1, tokens: 3_000, skipped: null, cache } });

    const invalidated = await metrics.registry
      .getSingleMetric('compactor_cache_invalidated_tokens_total')!
      .get();
    expect(invalidated.values.map((v) => [v.labels.kind, v.value])).toEqual([
      ['compaction', 13_000],
      ['prune', 6_450],
    ]);
    const cost = await metrics.registry.getSingleMetric('compactor_cache_rewrite_cost_usd_total')!.get();
    expect(cost.values.map((v) => [v.labels.kind, v.value])).toEqual([
      ['compaction', 0.000375],
      ['prune', 0.01105125],
    ]);
  });
});
