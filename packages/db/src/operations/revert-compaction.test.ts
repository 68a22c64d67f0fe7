/**
 * revertCompaction's clamps: a clamp that replaced an earlier compaction's clamp of the same part
 * becomes that clamp again, the others go; the view and its size are the ones before, step by
 * step back. Its prune marks, read only where its prune step could write them, and the purged
 * history check. (The API's tests cover the rest: boundaries, summaries, prune jobs' marks, refusals.)
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../errors';
import { insertCompaction } from '../queries/compactions';
import { contextTokenStats } from '../queries/context-tokens';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { appendTestMessages } from '../test-support/append-test-messages';
import type { StoredClamp } from './clamp-parts';
import { completeCompaction } from './complete-compaction';
import { loadContextRows } from './load-messages';
import { revertCompaction } from './revert-compaction';

const t = useTestDatabase();

/** Completes a compaction of the session keeping everything, with these clamps. */
async function completeWith(sessionPk: number, clamps: StoredClamp[]): Promise<string> {
  const row = await insertCompaction(t.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk,
    reason: 'manual',
    strategy: 'summarize',
    status: 'running',
  });
  await completeCompaction(t.db, {
    compactionId: row!.id,
    sessionPk,
    summaryMessages: [],
    boundarySeq: 1,
    tokensBefore: 0,
    messagesBefore: 0,
    finishedAt: new Date(),
    clamps,
  });
  return row!.id;
}

/** What a reader is served: the view's messages and its stored size. */
async function view(sessionPk: number) {
  const { messages } = await loadContextRows(t.db, sessionPk);
  return { messages, tokens: (await contextTokenStats(t.db, sessionPk)).storedTokens };
}

async function clampRows(sessionPk: number) {
  const { rows } = await t.database.pool.query(
    `select p.seq, p.clamped, c.clamped_by, c.field, c.tokens, c.tool_output, c.tool_input, c.previous
     from parts p left join part_clamps c on c.part_pk = p.pk
     where p.session_pk = $1 and p.type = 'tool' order by p.seq`,
    [sessionPk],
  );
  return rows;
}

const revert = (compactionId: string, tenantId = 'tenant-a') =>
  revertCompaction(t.db, { tenantId, compactionId, at: new Date() });

describe('revertCompaction and clamps', () => {
  it('puts back the clamp a reverted compaction replaced, and drops the ones it added', async () => {
    const session = await createTestSession(t.db);
    const input = { path: 'big.csv', content: 'z'.repeat(4000) };
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('write it', 5)]),
      newMessage('assistant', [
        tool('w', 'row\n'.repeat(2000), { input, tokens: 3_100, outputTokens: 2_000 }),
      ]),
      newMessage('assistant', [tool('r', 'col\n'.repeat(1000), { tokens: 1_005, outputTokens: 1_000 })]),
    ]);
    const clamp = { idx: 0, text: null, toolInput: null, toolError: null };
    const untouched = await view(session.pk);

    const first = await completeWith(session.pk, [
      {
        ...clamp,
        seq: 2,
        field: 'output',
        tokens: 1_150,
        outputTokens: 50,
        toolOutput: 'row\n[... clamped]',
      },
    ]);
    const afterFirst = await view(session.pk);
    const firstClamps = await clampRows(session.pk);

    const second = await completeWith(session.pk, [
      {
        ...clamp,
        seq: 2,
        field: 'input',
        tokens: 120,
        outputTokens: 50,
        toolOutput: null,
        toolInput: { path: 'big.csv', content: 'z[...]' },
      },
      { ...clamp, seq: 3, field: 'output', tokens: 30, outputTokens: 25, toolOutput: 'col\n[... clamped]' },
    ]);
    expect((await view(session.pk)).tokens).toBe(5 + 120 + 30);

    const undone = await revert(second);
    expect(undone).toMatchObject({ compaction: { id: second, status: 'reverted' }, restored: { id: first } });
    expect(undone.unclamped).toBe(2);
    expect(await clampRows(session.pk)).toEqual(firstClamps);
    expect(await view(session.pk)).toEqual(afterFirst);
    expect(afterFirst.tokens).toBe(5 + 1_150 + 1_005);

    await revert(first);
    expect(await view(session.pk)).toEqual(untouched);
    expect((await clampRows(session.pk)).map((r) => [r.clamped, r.clamped_by])).toEqual([
      [false, null],
      [false, null],
    ]);
  });

  it("refuses another tenant's compaction and one that is not completed, writing nothing", async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [newMessage('user', [text('hi', 2)])]);
    const id = await completeWith(session.pk, []);
    await expect(revert(id, 'tenant-b')).rejects.toBeInstanceOf(NotFoundError);
    await revert(id);
    const again = await revert(id).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(ConflictError);
    expect((again as ConflictError).details).toMatchObject({ reason: 'not_completed', status: 'reverted' });
  });
});

describe('revertCompaction: prune marks and purged history', () => {
  /** Completes a running compaction that covered through `coversThroughSeq`, boundary `boundarySeq`. */
  async function complete(sessionPk: number, id: string, coversThroughSeq: number, boundarySeq: number) {
    await insertCompaction(t.db, {
      id,
      sessionPk,
      reason: 'manual',
      strategy: 'truncate',
      status: 'running',
      coversThroughSeq,
    });
    await completeCompaction(t.db, {
      compactionId: id,
      sessionPk,
      summaryMessages: [],
      boundarySeq,
      tokensBefore: 0,
      messagesBefore: 0,
      finishedAt: new Date(),
    });
  }

  /** Marks part `idx` of each seq pruned by `by`. */
  async function mark(sessionPk: number, seqs: number[], idx: number, by: string) {
    await t.database.pool.query(
      `insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
       select $1, s, $2, now(), $3 from unnest($4::int[]) s`,
      [sessionPk, idx, by, seqs],
    );
  }

  async function marks(sessionPk: number): Promise<string[]> {
    const { rows } = await t.database.pool.query<{ at: string }>(
      `select seq || '.' || idx || ' ' || compacted_by as at from part_prunes where session_pk = $1
       order by seq, idx`,
      [sessionPk],
    );
    return rows.map((r) => r.at);
  }

  it("removes the compaction's marks in the view it pruned, pinned messages included, and no other's", async () => {
    // A pinned system message (seq 1) then turns of two outputs each; the first compaction keeps
    // seq 3 on, the second pruned what it saw (the pinned output, kept outputs through its covered
    // seq 6) and moved the boundary to 5. A prune job marked the other outputs.
    const session = await createTestSession(t.db);
    const other = await createTestSession(t.db);
    const turn = (seq: number) =>
      newMessage(seq === 1 ? 'system' : 'assistant', [tool(`a${seq}`, 'out a'), tool(`b${seq}`, 'out b')]);
    for (const pk of [session.pk, other.pk]) {
      await appendTestMessages(
        t.db,
        pk,
        Array.from({ length: 8 }, (_, i) => turn(i + 1)),
      );
    }
    await complete(session.pk, 'cmp_first', 2, 3);
    await mark(session.pk, [1, 4, 6], 0, 'cmp_second');
    await mark(session.pk, [1, 2, 3, 4, 5, 6, 7], 1, 'prune_job');
    await mark(other.pk, [1, 4, 6], 0, 'cmp_second');
    await complete(session.pk, 'cmp_second', 6, 5);

    const reverted = await revert('cmp_second');
    expect(reverted.unpruned).toBe(3);
    expect(await marks(session.pk)).toEqual([1, 2, 3, 4, 5, 6, 7].map((seq) => `${seq}.1 prune_job`));
    expect(await marks(other.pk)).toEqual(['1.0 cmp_second', '4.0 cmp_second', '6.0 cmp_second']);
  });

  it('refuses when a message between the boundaries was purged, not when only a summary there was', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(
      t.db,
      session.pk,
      Array.from({ length: 6 }, (_, i) => newMessage(i % 2 ? 'assistant' : 'user', [text(`m${i + 1}`, 2)])),
    );
    await complete(session.pk, 'cmp_one', 2, 3);
    await complete(session.pk, 'cmp_two', 5, 5);
    // Seq 4 lies between the restored boundary (3) and the undone one (5).
    await t.database.pool.query(
      `update messages set purged_at = now(), summary = true where session_pk = $1 and seq = 4`,
      [session.pk],
    );
    expect((await revert('cmp_two')).unpruned).toBe(0);
    await complete(session.pk, 'cmp_three', 5, 5);
    await t.database.pool.query(`update messages set summary = false where session_pk = $1 and seq = 4`, [
      session.pk,
    ]);
    const refused = await revert('cmp_three').catch((error: unknown) => error);
    expect((refused as ConflictError).details).toMatchObject({ reason: 'history_purged' });
  });
});
