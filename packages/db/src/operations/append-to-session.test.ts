import { describe, expect, it } from 'vitest';
import { ConflictError } from '../errors';
import { deleteSession, findSession } from '../queries/sessions';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { appendToSession } from './append-messages';
import { loadHistoryPage } from './load-messages';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

const seqs = async (pk: number) =>
  (await loadHistoryPage(t.db, pk, { afterSeq: 0, limit: 100 })).messages.map((m) => [m.id, m.seq]);

describe('appendToSession', () => {
  it('finds the session by its client ids, appends, and returns the session as it was locked', async () => {
    const session = await createTestSession(t.db, 'tenant-a', 'ses-found');
    const before = await findSession(t.db, 'tenant-a', 'ses-found');
    const outcome = await appendToSession(
      t.db,
      { tenantId: 'tenant-a', id: 'ses-found', modelId: session.modelId },
      [
        newMessage('user', [text('read a.ts', 3)], { id: 'u1' }),
        newMessage('assistant', [tool('call_1', 'export const a = 1;')], { id: 'a1' }),
      ],
    );
    expect(outcome).toEqual({
      kind: 'appended',
      // The row as findSession maps it (timestamps, bigints, JSON), read under the lock.
      session: before,
      appended: [
        { id: 'u1', seq: 1, created: true },
        { id: 'a1', seq: 2, created: true },
      ],
    });
    expect(await seqs(session.pk)).toEqual([
      ['u1', 1],
      ['a1', 2],
    ]);
  });

  it('writes nothing and says so when the session is missing or another tenant’s', async () => {
    const session = await createTestSession(t.db, 'tenant-a', 'ses-mine');
    const batch = [newMessage('user', [text('hello', 1)], { id: 'u1' })];
    expect(
      await appendToSession(t.db, { tenantId: 'tenant-b', id: 'ses-mine', modelId: session.modelId }, batch),
    ).toEqual({
      kind: 'missing',
    });
    expect(
      await appendToSession(t.db, { tenantId: 'tenant-a', id: 'ses-none', modelId: session.modelId }, batch),
    ).toEqual({
      kind: 'missing',
    });
    expect(await seqs(session.pk)).toEqual([]);
  });

  it('writes nothing when the session’s model is not the one the batch was counted for', async () => {
    const session = await createTestSession(t.db, 'tenant-a', 'ses-model');
    await t.db.execute(`update sessions set model_id = 'gpt-4' where pk = ${session.pk}`);
    const outcome = await appendToSession(
      t.db,
      { tenantId: 'tenant-a', id: 'ses-model', modelId: session.modelId },
      [newMessage('user', [text('hello', 1)], { id: 'u1' })],
    );
    expect(outcome).toMatchObject({ kind: 'model-changed', session: { pk: session.pk, modelId: 'gpt-4' } });
    expect(await seqs(session.pk)).toEqual([]);
  });

  it('decides re-posts and conflicts in the transaction', async () => {
    const session = await createTestSession(t.db, 'tenant-a', 'ses-repost');
    const target = { tenantId: 'tenant-a', id: 'ses-repost', modelId: session.modelId };
    const first = newMessage('user', [text('hello', 1)], { id: 'u1' });
    await appendToSession(t.db, target, [first]);
    const again = await appendToSession(t.db, target, [
      first,
      newMessage('user', [text('next', 1)], { id: 'u2' }),
    ]);
    expect(again).toMatchObject({
      kind: 'appended',
      appended: [
        { id: 'u1', seq: 1, created: false },
        { id: 'u2', seq: 2, created: true },
      ],
    });
    await expect(
      appendToSession(t.db, target, [newMessage('user', [text('other text', 2)], { id: 'u1' })]),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await seqs(session.pk)).toEqual([
      ['u1', 1],
      ['u2', 2],
    ]);
  });

  it('appends to the session that now has the id, after the old one was deleted', async () => {
    const old = await createTestSession(t.db, 'tenant-a', 'ses-again');
    await deleteSession(t.db, old.pk);
    const renewed = await createTestSession(t.db, 'tenant-a', 'ses-again');
    expect(renewed.pk).not.toBe(old.pk);
    const outcome = await appendToSession(
      t.db,
      { tenantId: 'tenant-a', id: 'ses-again', modelId: renewed.modelId },
      [newMessage('user', [text('hello', 1)], { id: 'u1' })],
    );
    expect(outcome).toMatchObject({ kind: 'appended', session: { pk: renewed.pk } });
    expect(await seqs(renewed.pk)).toEqual([['u1', 1]]);
  });
});
