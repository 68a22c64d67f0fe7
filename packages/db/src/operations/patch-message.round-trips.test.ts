import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConflictError } from '../errors';
import { appendTestMessages } from '../test-support/append-test-messages';
import { loadHistoryPage } from './load-messages';
import { patchMessage, patchMessageReading } from './patch-message';
import { sessionStatusInputs, sessionStatusInputsSql, statusInputsFromRows } from '../queries/session-status';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/** Every `query` call a pg client makes is one round trip (a pipeline is one call). */
let roundTrips = 0;
beforeEach(() => {
  const query = pg.Client.prototype.query;
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    roundTrips += 1;
    return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function counted<T>(work: () => Promise<T>): Promise<{ value: T; roundTrips: number }> {
  roundTrips = 0;
  const value = await work();
  return { value, roundTrips };
}

async function sessionWithOpenCall() {
  const session = await createTestSession(t.db);
  await appendTestMessages(t.db, session.pk, [
    newMessage('user', [text('read a.ts')], { id: 'ask' }),
    newMessage('assistant', [tool('call_1', null, { status: 'pending' })], { id: 'turn' }),
  ]);
  return session;
}

const storedTurn = async (sessionPk: number) =>
  (await loadHistoryPage(t.db, sessionPk, { afterSeq: -1, limit: 10 })).messages.find((m) => m.id === 'turn');

/** The seq the session's compactions were marked changed at (null: none). */
async function changedSeqs(sessionPk: number): Promise<Array<number | null>> {
  const { rows } = await t.db.$client.query<{ changed_seq: number | null }>(
    'select changed_seq from compactions where session_pk = $1 order by id',
    [sessionPk],
  );
  return rows.map((r) => r.changed_seq);
}

async function addCompaction(
  sessionPk: number,
  id: string,
  columns: { status: string; boundarySeq?: number },
): Promise<void> {
  await t.db.$client.query(
    `insert into compactions (id, session_pk, tenant_id, reason, strategy, status, boundary_seq,
       summary_message_ids, finished_at)
     select $1, pk, tenant_id, 'manual', 'summarize', $2, $3, $4, $5 from sessions where pk = $6`,
    [
      `${id}_${sessionPk}`,
      columns.status,
      columns.boundarySeq ?? null,
      [],
      columns.status === 'completed' ? new Date() : null,
      sessionPk,
    ],
  );
}

describe('patchMessage round trips', () => {
  it('a tool result is three round trips: the lock with the parts, the mark, boundary and writes, the commit', async () => {
    const session = await sessionWithOpenCall();
    const { value, roundTrips: trips } = await counted(() =>
      patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'file contents')] }),
    );
    expect(trips).toBe(3);
    expect(value.parts[0]).toMatchObject({ callId: 'call_1', status: 'completed', output: 'file contents' });
    expect(await storedTurn(session.pk)).toEqual(value);
  });

  it('an identical retry changes nothing: two round trips, and no compaction is marked', async () => {
    const session = await sessionWithOpenCall();
    await patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'file contents')] });
    await addCompaction(session.pk, 'cmp_running', { status: 'running' });
    const { value, roundTrips: trips } = await counted(() =>
      patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'file contents')] }),
    );
    expect(trips).toBe(2);
    expect(value).toEqual(await storedTurn(session.pk));
    expect(await changedSeqs(session.pk)).toEqual([null]);
  });

  it('a result behind the boundary is refused and rolled back: neither the part nor the mark is kept', async () => {
    const session = await sessionWithOpenCall();
    const turn = await storedTurn(session.pk);
    await addCompaction(session.pk, 'cmp_a_done', { status: 'completed', boundarySeq: turn!.seq + 1 });
    await addCompaction(session.pk, 'cmp_b_running', { status: 'running' });
    const refused = patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'late result')] });
    await expect(refused).rejects.toBeInstanceOf(ConflictError);
    await expect(refused).rejects.toMatchObject({ details: { reason: 'message_compacted' } });
    expect((await storedTurn(session.pk))?.parts[0]).toMatchObject({ status: 'pending', output: null });
    expect(await changedSeqs(session.pk)).toEqual([null, null]);
  });

  it('a kept message marks the running compaction that covers it, in the same transaction as the write', async () => {
    const session = await sessionWithOpenCall();
    const turn = await storedTurn(session.pk);
    await addCompaction(session.pk, 'cmp_running', { status: 'running' });
    await patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'result')] });
    expect(await changedSeqs(session.pk)).toEqual([turn!.seq]);
  });

  it('a new part finishing a call another message holds unfinished is refused with nothing written (one round trip more)', async () => {
    const session = await sessionWithOpenCall();
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [text('meanwhile')], { id: 'other' }),
    ]);
    const { roundTrips: trips } = await counted(async () => {
      const refused = patchMessage(t.db, session.pk, 'other', {
        finish: 'stop',
        parts: [tool('call_1', 'answered elsewhere')],
      });
      await expect(refused).rejects.toBeInstanceOf(ConflictError);
    });
    // The lock with the parts, the unfinished calls, the rollback.
    expect(trips).toBe(3);
    const other = (await loadHistoryPage(t.db, session.pk, { afterSeq: -1, limit: 10 })).messages.find(
      (m) => m.id === 'other',
    );
    expect(other?.parts.map((p) => p.type)).toEqual(['text']);
    expect(other?.finish).toBeNull();
  });

  it("a read sent with the patch (the session's status inputs) sees it, in the same three round trips", async () => {
    const session = await sessionWithOpenCall();
    const before = await sessionStatusInputs(t.db, session.pk);
    const { value, roundTrips: trips } = await counted(() =>
      patchMessageReading(
        t.db,
        session.pk,
        'turn',
        { parts: [tool('call_1', 'x'.repeat(4000))] },
        sessionStatusInputsSql(session.pk),
      ),
    );
    expect(trips).toBe(3);
    const read = statusInputsFromRows(value.readAfter!);
    expect(read.stats.storedTokens).toBeGreaterThan(before.stats.storedTokens + 900);
    expect(read).toEqual(await sessionStatusInputs(t.db, session.pk));
  });
});
