import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { searchRecall } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { crashingAtFinalize } from './test-support/crash';
import { useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();

/** The session's searchable parts by where they lie: behind the boundary, pruned, or in view. */
async function recallableParts(sessionPk: number, boundarySeq: number) {
  const { rows } = await w.resources.db.execute<{
    behind: number;
    behind_flagged: number;
    pruned: number;
    pruned_kept: number;
    pruned_flagged: number;
    in_view_flagged: number;
  }>(sql`
    select count(*) filter (where p.seq < ${boundarySeq})::int as behind,
           count(*) filter (where p.seq < ${boundarySeq} and p.recallable)::int as behind_flagged,
           count(pp.seq)::int as pruned,
           count(pp.seq) filter (where p.seq >= ${boundarySeq})::int as pruned_kept,
           count(pp.seq) filter (where p.recallable)::int as pruned_flagged,
           count(*) filter (where p.seq >= ${boundarySeq} and pp.seq is null and p.recallable)::int as in_view_flagged
    from parts p
    left join part_prunes pp on pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx
    where p.session_pk = ${sessionPk} and p.type in ('text', 'reasoning', 'tool')`);
  return rows[0]!;
}

describe('recall after a compaction (parts.recallable)', () => {
  it.each([['summarize'], ['topic']] as const)(
    'a %s compaction flags what it put behind the boundary and what it pruned, nothing in view',
    async (strategy) => {
      const session = await w.seedSession(generateCodingSession({ turns: 6 }), { policy: { strategy } });
      const { rows: before } = await w.resources.db.execute<{ flagged: number }>(
        sql`select count(*)::int as flagged from parts where session_pk = ${session.pk} and recallable`,
      );
      expect(before[0]!.flagged).toBe(0);

      const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
      const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
      expect(result.status).toBe('completed');
      const boundarySeq = result.compaction!.boundarySeq!;

      const parts = await recallableParts(session.pk, boundarySeq);
      expect(parts.behind).toBeGreaterThan(0);
      expect(parts.behind_flagged).toBe(parts.behind);
      expect(parts.pruned_flagged).toBe(parts.pruned);
      expect(parts.in_view_flagged).toBe(0);

      // The first user request is behind the boundary: recall finds it.
      const hits = await searchRecall(w.resources.db, session.pk, {
        query: 'heap',
        limit: 5,
        excerptChars: 200,
        pinSystemMessages: true,
      });
      expect(hits.length).toBeGreaterThan(0);
      expect(hits.every((hit) => hit.seq < boundarySeq || hit.source === 'cleared')).toBe(true);
    },
  );

  it('flags the outputs its prune step cleared in the kept range, when an earlier attempt cleared them', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 12 }), {
      policy: {
        pruning: { protectTokens: 500, minimumTokens: 500 },
        keepRecent: { manualTokens: 8_000, manualCappedByAuto: false },
      },
    });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    // The first attempt prunes, summarises and loses its connection at the completion; its flags
    // are undone, as if it had crashed before them. The retry goes straight to finalize with the
    // saved draft: the marks are not in its memory.
    const crashing = crashingAtFinalize(w.resources);
    await expect(runCompaction(crashing, compaction.id, { lastAttempt: false })).rejects.toThrow(
      /terminated/,
    );
    await w.resources.db.execute(sql`update parts set recallable = false where session_pk = ${session.pk}`);

    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    expect(result.compaction!.attempts).toBe(2);
    const parts = await recallableParts(session.pk, result.compaction!.boundarySeq!);
    expect(parts.pruned_kept).toBeGreaterThan(0);
    expect(parts.pruned_flagged).toBe(parts.pruned);
    expect(parts.behind_flagged).toBe(parts.behind);
    expect(parts.in_view_flagged).toBe(0);
  });
});
