import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { pruneSession } from './prune-session';
import { useWorkflow } from './test-support/workflow';

const w = useWorkflow();

const POLICY = { pruning: { protectTokens: 500, minimumTokens: 500 } };

/** The session's parts the recall search may find (`recallable`), as `seq.idx`. */
async function flagged(sessionPk: number): Promise<string[]> {
  const { rows } = await w.resources.db.execute<{ at: string }>(sql`
    select seq || '.' || idx as at from parts where session_pk = ${sessionPk} and recallable
    order by seq, idx`);
  return rows.map((r) => r.at);
}

/** The parts `jobId` marked pruned, as `seq.idx`. */
async function markedBy(sessionPk: number, jobId: string): Promise<string[]> {
  const { rows } = await w.resources.db.execute<{ at: string }>(sql`
    select seq || '.' || idx as at from part_prunes where session_pk = ${sessionPk} and compacted_by = ${jobId}
    order by seq, idx`);
  return rows.map((r) => r.at);
}

describe('recall after a prune job', () => {
  it("flags exactly the outputs the job marked, and no other session's or tenant's", async () => {
    const messages = generateCodingSession({ turns: 12 });
    const session = await w.seedSession(messages, { policy: POLICY });
    const sibling = await w.seedSession(messages, { policy: POLICY });
    const otherTenant = await w.seedSession(messages, { policy: POLICY, tenantId: 'tenant-other' });
    // The others carry marks of the same job id at the same seqs, not yet flagged.
    for (const other of [sibling, otherTenant]) {
      await w.resources.db.execute(sql`
        insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
        select session_pk, seq, idx, now(), 'prn_recall' from parts
        where session_pk = ${other.pk} and type = 'tool' and tool_status = 'completed'`);
    }

    const outcome = await pruneSession(w.resources, session.pk, { jobId: 'prn_recall' });
    expect(outcome.parts).toBeGreaterThan(1);
    const marked = await markedBy(session.pk, 'prn_recall');
    expect(marked).toHaveLength(outcome.parts);
    expect(await flagged(session.pk)).toEqual(marked);
    expect(await flagged(sibling.pk)).toEqual([]);
    expect(await flagged(otherTenant.pk)).toEqual([]);

    // The next job marks nothing (the walk stops at the marks), so it flags nothing either.
    expect((await pruneSession(w.resources, session.pk, { jobId: 'prn_again' })).parts).toBe(0);
    expect(await flagged(session.pk)).toEqual(marked);
  });

  it('a retry flags what an earlier try marked and stopped before flagging', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 12 }), { policy: POLICY });
    // The first try's statement committed its marks; the worker died before the flagging.
    const first = await pruneSession(w.resources, session.pk, { jobId: 'prn_crash' });
    await w.resources.db.execute(sql`update parts set recallable = false where session_pk = ${session.pk}`);
    const marked = await markedBy(session.pk, 'prn_crash');
    expect(marked).toHaveLength(first.parts);

    // Run again without knowing it is a retry, the job marks nothing and flags nothing.
    expect((await pruneSession(w.resources, session.pk, { jobId: 'prn_crash' })).parts).toBe(0);
    expect(await flagged(session.pk)).toEqual([]);
    // The queue's retry flags the first try's marks.
    expect((await pruneSession(w.resources, session.pk, { jobId: 'prn_crash', retry: true })).parts).toBe(0);
    expect(await flagged(session.pk)).toEqual(marked);
  });
});
