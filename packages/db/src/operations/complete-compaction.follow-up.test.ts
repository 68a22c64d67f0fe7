/**
 * completeCompactionFollowedUp: the next compaction, when the caller's decision asks for one, is
 * inserted with its outbox entry in the completing transaction; the decision sees what the
 * completion measured there; a stale attempt decides nothing and inserts nothing.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { StaleAttemptError } from '../errors';
import { claimCompaction } from '../queries/compaction-lifecycle';
import { findActiveCompaction, insertCompaction, type CompactionRequestRow } from '../queries/compactions';
import { createTestSession, newMessage, text } from '../test-support/fixtures';
import { appendTestMessages } from '../test-support/append-test-messages';
import { completeCompactionFollowedUp, type CompletionMeasured } from './complete-compaction';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/** A session with a pinned system message, a compaction claimed over it, then a turn appended meanwhile. */
async function outrun() {
  // A tenant of its own: the follow-up's rank counts the tenant's other active compactions.
  const session = await createTestSession(t.db, `tenant-${randomUUID()}`);
  await appendTestMessages(t.db, session.pk, [
    newMessage('system', [text('you are an agent', 20)]),
    ...[1, 2, 3].flatMap((i) => [
      newMessage('user', [text(`question ${i}`, 10)]),
      newMessage('assistant', [text(`answer ${i}`, 30)]),
    ]),
  ]);
  const row = await insertCompaction(t.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk: session.pk,
    reason: 'auto',
    strategy: 'summarize',
  });
  const claimed = (await claimCompaction(t.db, row!.id, new Date()))!.compaction;
  await appendTestMessages(t.db, session.pk, [
    newMessage('user', [text('meanwhile', 100)]),
    newMessage('assistant', [text('reply', 200)]),
  ]);
  return { session, compaction: claimed };
}

const nextRow = (sessionPk: number): CompactionRequestRow => ({
  id: `cmp_${randomUUID()}`,
  sessionPk,
  reason: 'auto',
  strategy: 'summarize',
});

async function xmin(table: 'compactions' | 'outbox', column: 'id' | 'job_id', id: string) {
  const { rows } = await t.db.$client.query<{ xmin: string }>(
    `select xmin::text from ${table} where ${column} = $1`,
    [id],
  );
  return rows.map((r) => r.xmin);
}

describe('completeCompactionFollowedUp', () => {
  it.each([
    ['with a summary (pipelined)', true],
    ['without summary messages (a truncation)', false],
  ])(
    'inserts the follow-up the decision asks for in the completing transaction (%s)',
    async (_, withSummary) => {
      const { session, compaction } = await outrun();
      const seen: CompletionMeasured[] = [];
      const next = nextRow(session.pk);
      const result = await completeCompactionFollowedUp(
        t.db,
        {
          compactionId: compaction.id,
          fence: compaction.fence,
          sessionPk: session.pk,
          summaryMessages: withSummary
            ? [newMessage('assistant', [text('the summary', 50)], { id: `${compaction.id}_summary` })]
            : [],
          boundarySeq: 6,
          tokensBefore: 100,
          messagesBefore: 7,
          pinSystemMessages: true,
          finishedAt: new Date(),
        },
        {
          coversThroughSeq: compaction.coversThroughSeq!,
          decide(measured) {
            seen.push(measured);
            return { row: next, jobName: 'compact' };
          },
        },
      );

      // Measured in the transaction: the pinned system message, and only what came after the
      // covered range (the two messages appended meanwhile, not the summary).
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({
        completed: { id: compaction.id, status: 'completed' },
        pinnedTokens: 20,
        appended: { newestSeq: compaction.coversThroughSeq! + 2, tokens: 300 },
      });
      expect(result.completed.tokensAfter).toBe(seen[0]!.completed.tokensAfter);
      // First in its tenant's backlog: the completed one no longer counts.
      expect(result.followUp).toMatchObject({
        compaction: { id: next.id, status: 'pending', reason: 'auto' },
        outbox: { jobName: 'compact', jobId: next.id, priority: 1 },
      });
      expect(await findActiveCompaction(t.db, session.pk)).toMatchObject({ id: next.id });
      // One commit made the first completed and the next pending (with its job's entry).
      const [completion] = await xmin('compactions', 'id', compaction.id);
      expect(await xmin('compactions', 'id', next.id)).toEqual([completion]);
      expect(await xmin('outbox', 'job_id', next.id)).toEqual([completion]);
    },
  );

  it('completes without a follow-up when the decision asks for none', async () => {
    const { session, compaction } = await outrun();
    const result = await completeCompactionFollowedUp(
      t.db,
      {
        compactionId: compaction.id,
        fence: compaction.fence,
        sessionPk: session.pk,
        summaryMessages: [
          newMessage('assistant', [text('the summary', 50)], { id: `${compaction.id}_summary` }),
        ],
        boundarySeq: 6,
        tokensBefore: 100,
        messagesBefore: 7,
        finishedAt: new Date(),
      },
      { coversThroughSeq: compaction.coversThroughSeq!, decide: () => null },
    );
    expect(result).toMatchObject({ completed: { status: 'completed' }, followUp: null });
    expect(await findActiveCompaction(t.db, session.pk)).toBeNull();
  });

  it('a stale attempt decides nothing and inserts nothing', async () => {
    const { session, compaction } = await outrun();
    // Another worker took the compaction over.
    await claimCompaction(t.db, compaction.id, new Date());
    let decided = 0;
    await expect(
      completeCompactionFollowedUp(
        t.db,
        {
          compactionId: compaction.id,
          fence: compaction.fence,
          sessionPk: session.pk,
          summaryMessages: [
            newMessage('assistant', [text('stale summary', 50)], { id: `${compaction.id}_stale` }),
          ],
          boundarySeq: 6,
          tokensBefore: 100,
          messagesBefore: 7,
          finishedAt: new Date(),
        },
        {
          coversThroughSeq: compaction.coversThroughSeq!,
          decide: () => {
            decided++;
            return { row: nextRow(session.pk), jobName: 'compact' };
          },
        },
      ),
    ).rejects.toBeInstanceOf(StaleAttemptError);
    expect(decided).toBe(0);
    expect(await findActiveCompaction(t.db, session.pk)).toMatchObject({
      id: compaction.id,
      status: 'running',
    });
  });
});
