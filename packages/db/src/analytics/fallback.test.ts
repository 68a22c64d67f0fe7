/**
 * A compaction the truncate fallback completed: the completion writes the fallback's columns,
 * migration 0009 fills them in for compactions that recorded it in their details only, and the
 * analyst views show them (their grants kept when the migration replaced them).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS_FOLDER } from '../migrate';
import { completeCompaction } from '../operations/complete-compaction';
import { claimCompaction } from '../queries/compaction-lifecycle';
import { findCompaction, insertCompaction, updateCompaction } from '../queries/compactions';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/** A claimed compaction over a short session. */
async function claimed() {
  const session = await createTestSession(t.db);
  await appendTestMessages(t.db, session.pk, [
    newMessage('user', [text('question', 10)]),
    newMessage('assistant', [text('answer', 30)]),
  ]);
  const row = await insertCompaction(t.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk: session.pk,
    reason: 'auto',
    strategy: 'summarize',
  });
  const claim = await claimCompaction(t.db, row!.id, new Date());
  return { session, compaction: claim!.compaction };
}

const complete = async (fallback: { code: string; message: string } | null) => {
  const { session, compaction } = await claimed();
  return completeCompaction(t.db, {
    compactionId: compaction.id,
    fence: compaction.fence,
    sessionPk: session.pk,
    summaryMessages: [],
    boundarySeq: 2,
    tokensBefore: 40,
    messagesBefore: 2,
    details: { writtenBy: fallback ? 'truncate' : 'llm' },
    fallback,
    finishedAt: new Date(),
  });
};

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

describe('the fallback of a compaction', () => {
  it('is written by the completion, and shown by the analyst views', async () => {
    const fellBack = await complete({ code: 'llm_retries_exhausted', message: 'LLM 500: upstream error' });
    const byLlm = await complete(null);
    expect(fellBack).toMatchObject({
      status: 'completed',
      fallbackCode: 'llm_retries_exhausted',
      fallbackMessage: 'LLM 500: upstream error',
    });
    expect(byLlm).toMatchObject({ status: 'completed', fallbackCode: null, fallbackMessage: null });

    const rows = await asAnalyst(
      `select compaction_id, strategy, written_by, fallback_code, fallback_message
       from analytics.compactions where compaction_id = any($1) order by written_by`,
      [[fellBack.id, byLlm.id]],
    );
    expect(rows).toEqual([
      {
        compaction_id: byLlm.id,
        strategy: 'summarize',
        written_by: 'llm',
        fallback_code: null,
        fallback_message: null,
      },
      {
        compaction_id: fellBack.id,
        strategy: 'summarize',
        written_by: 'truncate',
        fallback_code: 'llm_retries_exhausted',
        fallback_message: 'LLM 500: upstream error',
      },
    ]);
    const [daily] = await asAnalyst(
      `select sum(completed) as completed, sum(fallbacks) as fallbacks from analytics.daily`,
    );
    expect(daily).toEqual({ completed: '2', fallbacks: '1' });
  });

  it('is filled in by migration 0009 for compactions that recorded it in their details only', async () => {
    const old = await complete(null);
    await updateCompaction(t.db, old.id, {
      details: { writtenBy: 'truncate', fallback: { code: 'llm_fatal', message: 'LLM 401: bad key' } },
    });
    const migration = readFileSync(join(MIGRATIONS_FOLDER, '0009_compaction_fallback.sql'), 'utf8');
    const backfill = migration.slice(migration.indexOf('UPDATE "compactions"'));
    await t.database.pool.query(backfill.slice(0, backfill.indexOf(';')));
    expect(await findCompaction(t.db, old.id)).toMatchObject({
      fallbackCode: 'llm_fatal',
      fallbackMessage: 'LLM 401: bad key',
    });
  });
});
