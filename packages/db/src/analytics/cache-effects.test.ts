/**
 * The prompt-cache effect of compactions and prune jobs, as analysts read it: the compactions
 * view's cache columns (appended by migration 0019, the grant kept) and the prune runs view.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { completeCompaction } from '../operations/complete-compaction';
import { appendTestMessages } from '../test-support/append-test-messages';
import { claimCompaction } from '../queries/compaction-lifecycle';
import { insertCompaction } from '../queries/compactions';
import {
  cacheEffectOf,
  insertPruneRun,
  recordCompactionCache,
  type PruneRunRecord,
} from '../queries/cache-effects';
import { createTestSession, newMessage, text } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/** `statement` as the analyst role, every value as Postgres' text. */
async function asAnalyst(statement: string, values: unknown[] = []) {
  const client = new pg.Client({
    connectionString: t.url,
    types: { getTypeParser: () => (value: string) => value },
  });
  await client.connect();
  try {
    await client.query('set role compactor_analyst');
    return (await client.query(statement, values)).rows;
  } finally {
    await client.end();
  }
}

const effect = {
  invalidatedTokens: 12_500,
  rewriteCostUsd: 0.000375,
  savingPerTurnUsd: 0.00342,
  breakEvenTurns: 1,
};

describe('cache effects in the analyst views', () => {
  it('a completed compaction shows its cache columns; one without a recorded effect shows nulls', async () => {
    const session = await createTestSession(t.db, 'tenant-cache-views');
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('question', 10)]),
      newMessage('assistant', [text('answer', 30)]),
    ]);
    const complete = async () => {
      const row = await insertCompaction(t.db, {
        id: `cmp_${randomUUID()}`,
        sessionPk: session.pk,
        reason: 'manual',
        strategy: 'truncate',
      });
      const claim = await claimCompaction(t.db, row!.id, new Date());
      return completeCompaction(t.db, {
        compactionId: claim!.compaction.id,
        fence: claim!.compaction.fence,
        sessionPk: session.pk,
        summaryMessages: [],
        boundarySeq: 2,
        tokensBefore: 40,
        messagesBefore: 2,
        finishedAt: new Date(),
      });
    };
    const priced = await complete();
    const recorded = await recordCompactionCache(t.db, priced.id, effect);
    expect(cacheEffectOf(recorded!)).toEqual(effect);
    const unrecorded = await complete();
    expect(cacheEffectOf(unrecorded)).toBeNull();

    const rows = await asAnalyst(
      `select compaction_id, cache_invalidated_tokens, cache_rewrite_cost_usd, cache_saving_per_turn_usd,
              cache_break_even_turns
       from analytics.compactions where compaction_id = any($1) order by finished_at`,
      [[priced.id, unrecorded.id]],
    );
    expect(rows).toEqual([
      {
        compaction_id: priced.id,
        cache_invalidated_tokens: '12500',
        cache_rewrite_cost_usd: '0.00037500',
        cache_saving_per_turn_usd: '0.00342000',
        cache_break_even_turns: '1',
      },
      {
        compaction_id: unrecorded.id,
        cache_invalidated_tokens: null,
        cache_rewrite_cost_usd: null,
        cache_saving_per_turn_usd: null,
        cache_break_even_turns: null,
      },
    ]);
  });

  it('a prune job is one row of analytics.prune_runs, recorded once', async () => {
    const session = await createTestSession(t.db, 'tenant-prune-views');
    const run = {
      jobId: `prn_${randomUUID()}`,
      sessionPk: session.pk,
      trigger: 'turn' as const,
      parts: 1,
      tokens: 3_000,
      tokensBefore: 7_760,
      tokensAfter: 4_773,
      cache: {
        invalidatedTokens: 6_450,
        rewriteCostUsd: 0.01105125,
        savingPerTurnUsd: 0.0008961,
        breakEvenTurns: 13,
      },
      ranAt: new Date('2026-11-27T12:00:00.000Z'),
    };
    expect(await insertPruneRun(t.db, run)).toMatchObject({ tenantId: 'tenant-prune-views', parts: 1 });
    expect(await insertPruneRun(t.db, { ...run, parts: 0 })).toBeNull();
    const unpriced: PruneRunRecord = {
      ...run,
      jobId: `prn_${randomUUID()}`,
      cache: { invalidatedTokens: 0, rewriteCostUsd: null, savingPerTurnUsd: null, breakEvenTurns: null },
      ranAt: new Date('2026-11-27T12:05:00.000Z'),
    };
    await insertPruneRun(t.db, unpriced);

    const rows = await asAnalyst(
      `select job_id, tenant_id, session_id, trigger, ran_at, pruned_parts, pruned_tokens, tokens_before,
              tokens_after, tokens_saved, cache_invalidated_tokens, cache_rewrite_cost_usd,
              cache_saving_per_turn_usd, cache_break_even_turns
       from analytics.prune_runs where session_id = $1 order by ran_at`,
      [session.id],
    );
    expect(rows).toEqual([
      {
        job_id: run.jobId,
        tenant_id: 'tenant-prune-views',
        session_id: session.id,
        trigger: 'turn',
        ran_at: expect.stringMatching(/^2026-11-27 12:00:00/),
        pruned_parts: '1',
        pruned_tokens: '3000',
        tokens_before: '7760',
        tokens_after: '4773',
        tokens_saved: '2987',
        cache_invalidated_tokens: '6450',
        cache_rewrite_cost_usd: '0.01105125',
        cache_saving_per_turn_usd: '0.00089610',
        cache_break_even_turns: '13',
      },
      expect.objectContaining({
        job_id: unpriced.jobId,
        cache_invalidated_tokens: '0',
        cache_rewrite_cost_usd: null,
        cache_break_even_turns: null,
      }),
    ]);
  });
});
