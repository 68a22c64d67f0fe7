import { and, asc, desc, eq, getTableColumns, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { compactions, partPrunes, parts, sessions } from '../schema';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { findLatestCompletedCompaction, insertCompaction } from './compactions';
import { listPartsOfMessages, markPartsCompacted } from './parts';
import { findSessionByPk } from './sessions';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/**
 * The reads that run as prepared statements map their rows themselves; each must give exactly
 * what drizzle's own select gives (types included: dates, bigints as numbers, JSON).
 */
describe('prepared reads equal drizzle selects', () => {
  it('listPartsOfMessages, with and without pruned outputs', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('read both files', 4)], { id: 'u1' }),
      newMessage(
        'assistant',
        [text('reading', 2), tool('call_1', 'a'.repeat(200)), tool('call_2', 'b'.repeat(50))],
        {
          id: 'a1',
        },
      ),
    ]);
    await markPartsCompacted(t.db, session.pk, [{ seq: 2, callId: 'call_1' }], {
      at: new Date('2026-01-02T03:04:05.678Z'),
      by: 'test',
    });
    const pks = (
      await t.db.select({ pk: parts.messagePk }).from(parts).where(eq(parts.sessionPk, session.pk))
    ).map((row) => row.pk);
    for (const omitPrunedOutputs of [false, true]) {
      const reference = await t.db
        .select({
          ...getTableColumns(parts),
          toolOutput: omitPrunedOutputs
            ? sql<string | null>`case when ${partPrunes.compactedAt} is null then ${parts.toolOutput} end`
            : parts.toolOutput,
          compactedAt: partPrunes.compactedAt,
        })
        .from(parts)
        .leftJoin(
          partPrunes,
          and(
            eq(partPrunes.sessionPk, parts.sessionPk),
            eq(partPrunes.seq, parts.seq),
            eq(partPrunes.idx, parts.idx),
          ),
        )
        .where(eq(parts.sessionPk, session.pk))
        .orderBy(asc(parts.messagePk), asc(parts.idx));
      const ours = await listPartsOfMessages(t.db, [...new Set(pks)], { omitPrunedOutputs });
      expect(ours).toEqual(reference);
      expect(ours.find((p) => p.callId === 'call_1')).toMatchObject({
        compactedAt: new Date('2026-01-02T03:04:05.678Z'),
        toolOutput: omitPrunedOutputs ? null : 'a'.repeat(200),
      });
    }
  });

  it('findLatestCompletedCompaction and findSessionByPk', async () => {
    const session = await createTestSession(t.db);
    expect(await findLatestCompletedCompaction(t.db, session.pk)).toBeNull();
    for (const [id, finishedAt] of [
      ['cmp_old', '2026-01-01T00:00:00Z'],
      ['cmp_new', '2026-01-02T00:00:00Z'],
    ] as const) {
      await insertCompaction(t.db, {
        id: `${id}_${session.pk}`,
        sessionPk: session.pk,
        reason: 'manual',
        strategy: 'summarize',
      });
      await t.db.execute(
        `update compactions set status = 'completed', finished_at = '${finishedAt}', usage_input = 12, details = '{"a":[1]}' where id = '${id}_${session.pk}'`,
      );
    }
    const [reference] = await t.db
      .select()
      .from(compactions)
      .where(and(eq(compactions.sessionPk, session.pk), eq(compactions.status, 'completed')))
      .orderBy(desc(compactions.finishedAt), desc(compactions.requestedAt))
      .limit(1);
    expect(await findLatestCompletedCompaction(t.db, session.pk)).toEqual(reference);
    expect(reference).toMatchObject({ id: `cmp_new_${session.pk}` });

    const [sessionReference] = await t.db.select().from(sessions).where(eq(sessions.pk, session.pk));
    expect(await findSessionByPk(t.db, session.pk)).toEqual(sessionReference);
    expect(await findSessionByPk(t.db, -1)).toBeNull();
  });
});
