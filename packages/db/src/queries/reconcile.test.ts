import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createTestSession } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { endPreparedSummary, requestPreparedSummary } from './prepared-summaries';
import { findPendingDraftsToCheck, pendingDraftsSweepSql } from './reconcile';

const t = useTestDatabase();

/** A pending draft of a new session, requested `minutesAgo` minutes ago. */
async function draftRequested(id: string, minutesAgo: number, tenantId = 'tenant-a') {
  const session = await createTestSession(t.db, tenantId);
  await requestPreparedSummary(t.db, {
    sessionPk: session.pk,
    id,
    baseCompactionId: null,
    headroomTokens: 0,
    jobName: 'prepare',
  });
  await t.db.execute(
    sql`update prepared_summaries set requested_at = now() - make_interval(mins => ${minutesAgo}) where id = ${id}`,
  );
  return session;
}

describe('findPendingDraftsToCheck: the reconciler’s pending drafts', () => {
  it('lists pending drafts past the threshold, oldest first, up to the limit, of every tenant', async () => {
    const oldest = await draftRequested('prp_q_oldest', 30, 'tenant-b');
    const older = await draftRequested('prp_q_older', 20);
    await draftRequested('prp_q_old', 10);
    await draftRequested('prp_q_fresh', 0);
    const ended = await draftRequested('prp_q_ended', 40);
    await endPreparedSummary(t.db, ended.pk, 'prp_q_ended', 'failed', 'llm_retries_exhausted');

    const fiveMinutes = 5 * 60_000;
    expect(await findPendingDraftsToCheck(t.db, { olderThanMs: fiveMinutes, limit: 2 })).toMatchObject([
      { sessionPk: oldest.pk, id: 'prp_q_oldest' },
      { sessionPk: older.pk, id: 'prp_q_older' },
    ]);
    const all = await findPendingDraftsToCheck(t.db, { olderThanMs: fiveMinutes, limit: 10 });
    expect(all.map((d) => d.id)).toEqual(['prp_q_oldest', 'prp_q_older', 'prp_q_old']);
    // Resumed after the last one checked.
    const after = await findPendingDraftsToCheck(t.db, {
      olderThanMs: fiveMinutes,
      limit: 1,
      after: all[0]!.position,
    });
    expect(after.map((d) => d.id)).toEqual(['prp_q_older']);
    expect(
      await findPendingDraftsToCheck(t.db, { olderThanMs: fiveMinutes, limit: 10, after: all[2]!.position }),
    ).toEqual([]);
  });

  it('resumes among drafts requested in the same instant by session', async () => {
    const first = await draftRequested('prp_same_1', 15);
    const second = await draftRequested('prp_same_2', 15);
    await t.db.execute(
      sql`update prepared_summaries set requested_at = (select requested_at from prepared_summaries where id = 'prp_same_1')
          where id = 'prp_same_2'`,
    );
    const both = (await findPendingDraftsToCheck(t.db, { olderThanMs: 0, limit: 100 })).filter((d) =>
      d.id.startsWith('prp_same_'),
    );
    expect(both.map((d) => d.sessionPk)).toEqual([first.pk, second.pk]);
    const next = await findPendingDraftsToCheck(t.db, { olderThanMs: 0, limit: 1, after: both[0]!.position });
    expect(next.map((d) => d.id)).toEqual(['prp_same_2']);
  });

  it('reads the pending drafts in their partial index’s order, from the start and resumed', async () => {
    // With sequential scans priced out the plan shows the statement's predicate implies the
    // index's and its order is the index's: a range scan stopped by the limit, no sort of every
    // match (docs/plans/prepared-drafts-sweep-100k.txt has the plans at 100k sessions).
    const [first] = await findPendingDraftsToCheck(t.db, { olderThanMs: 0, limit: 1 });
    for (const after of [null, first!.position]) {
      const plan = await t.db.transaction(async (tx) => {
        await tx.execute(sql`set local enable_seqscan = off`);
        const { rows } = await tx.execute<{ 'QUERY PLAN': string }>(
          sql`explain ${pendingDraftsSweepSql({ olderThanMs: 300_000, limit: 500, after })}`,
        );
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
      expect(plan).toContain('Index Scan using prepared_summaries_pending_idx');
      expect(plan).not.toContain('Sort');
    }
  });
});
