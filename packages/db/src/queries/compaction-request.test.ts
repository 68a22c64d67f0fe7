import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { outbox } from '../schema';
import { createTestSession } from '../test-support/fixtures';
import { findCompaction, insertCompaction, insertCompactionWithOutbox } from './compactions';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

const request = (id: string, sessionPk: number, idempotencyKey: string | null = null) => ({
  id,
  sessionPk,
  reason: 'manual' as const,
  strategy: 'summarize' as const,
  keepRecentTokens: 2_000,
  instructions: 'focus on the API',
  force: false,
  idempotencyKey,
});

describe('insertCompactionWithOutbox', () => {
  it('writes the compaction and its job in the outbox, as the separate inserts would', async () => {
    const session = await createTestSession(t.db);
    const written = await insertCompactionWithOutbox(t.db, request('cmp_one', session.pk), 'compact');
    expect(written?.compaction).toEqual(await findCompaction(t.db, 'cmp_one'));
    expect(written?.compaction).toMatchObject({
      status: 'pending',
      attempts: 0,
      fence: 0,
      keepRecentTokens: 2_000,
      instructions: 'focus on the API',
    });
    const [entry] = await t.db.select().from(outbox).where(eq(outbox.jobId, 'cmp_one'));
    expect(written?.outbox).toEqual(entry);
    expect(entry).toMatchObject({
      jobName: 'compact',
      payload: { compactionId: 'cmp_one' },
      dispatchedAt: null,
    });
  });

  it('writes neither row when the session has an active compaction or the idempotency key was used', async () => {
    const session = await createTestSession(t.db);
    await insertCompaction(t.db, request('cmp_active', session.pk, 'key-1'));
    const count = async () =>
      (await t.db.execute<{ n: number }>(sql`select count(*)::int as n from outbox`)).rows[0]!.n;
    const before = await count();
    expect(await insertCompactionWithOutbox(t.db, request('cmp_second', session.pk), 'compact')).toBeNull();
    const other = await createTestSession(t.db);
    expect(
      await insertCompactionWithOutbox(t.db, request('cmp_same_key', session.pk, 'key-1'), 'compact'),
    ).toBeNull();
    expect(await findCompaction(t.db, 'cmp_second')).toBeNull();
    expect(await count()).toBe(before);
    // Another session is not held by it.
    expect(await insertCompactionWithOutbox(t.db, request('cmp_other', other.pk), 'compact')).not.toBeNull();
  });

  it("gives the job its rank in its tenant's backlog as priority: every tenant's first before any second", async () => {
    const priority = async (id: string, tenantId: string) => {
      const session = await createTestSession(t.db, tenantId);
      return (await insertCompactionWithOutbox(t.db, request(id, session.pk), 'compact'))?.outbox.priority;
    };
    expect(await priority('cmp_rank_a1', 'tenant-rank-a')).toBe(1);
    expect(await priority('cmp_rank_a2', 'tenant-rank-a')).toBe(2);
    expect(await priority('cmp_rank_a3', 'tenant-rank-a')).toBe(3);
    expect(await priority('cmp_rank_b1', 'tenant-rank-b')).toBe(1);
    // A finished compaction leaves the backlog: the tenant's next one takes its rank.
    await t.db.execute(sql`update compactions set status = 'completed' where id = 'cmp_rank_a1'`);
    expect(await priority('cmp_rank_a4', 'tenant-rank-a')).toBe(3);
  });
});
