/**
 * Compactions a client asks for, at the package's boundary (real Postgres, real queues): manual
 * requests and joining the active one, the Idempotency-Key, the tenant's cap on active
 * compactions, overflow reports, prunes, pages and details, and a revert's preconditions.
 */
import { describe, expect, it } from 'vitest';
import { completeCompaction, ConflictError, type SessionRow } from '@compactor/db';
import { CompactionNotFound, InvalidInput, SessionNotFound } from './errors';
import { revertCompaction } from './compaction-revert';
import {
  compactionDetail,
  compactionsPage,
  reportOverflow,
  requestManualCompaction,
  requestPrune,
} from './compactions';
import { TenantLimitReached, TenantLimits } from './tenant-limits';
import { countCompactionsOf } from './test-support/counts';
import { newSession, parsedMessages, useTestSessions, userText } from './test-support/session-resources';

const t = useTestSessions();

const compact = (
  tenantId: string,
  id: string,
  body: Parameters<typeof requestManualCompaction>[3] = {},
  idempotencyKey?: string,
  limits = t.limits,
) => requestManualCompaction(t.resources, limits, { tenantId, id }, body, idempotencyKey);

/** Ends a compaction as a worker would: completed, its boundary after the first message. */
async function complete(session: SessionRow, compactionId: string): Promise<void> {
  await t.database.db.$client.query(`update compactions set status = 'running' where id = $1`, [
    compactionId,
  ]);
  await completeCompaction(t.database.db, {
    compactionId,
    sessionPk: session.pk,
    summaryMessages: [],
    boundarySeq: 1,
    tokensBefore: 0,
    messagesBefore: 0,
    finishedAt: new Date(),
  });
}

/** A session with a few messages, so a compaction has something to cover. */
async function sessionWithHistory(tenantId: string, id: string): Promise<SessionRow> {
  const session = await newSession(t, tenantId, id);
  await t.messages.append({ tenantId, id }, parsedMessages([userText(50), userText(50)]), t.log);
  return session;
}

describe('requestManualCompaction', () => {
  it('starts a compaction and enqueues its job; a repeat joins the active one', async () => {
    const session = await sessionWithHistory('tenant-a', 'c-manual');
    const first = await compact('tenant-a', 'c-manual', { instructions: 'keep the schema' });
    expect(first.created).toBe(true);
    expect(first.compaction).toMatchObject({ status: 'pending', reason: 'manual', sessionId: 'c-manual' });
    expect(await t.jobIds('compact')).toContain(first.compaction.id);

    const again = await compact('tenant-a', 'c-manual');
    expect(again).toMatchObject({ created: false, compaction: { id: first.compaction.id } });
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(1);
  });

  it('with an Idempotency-Key: the same request is the same compaction, another body a ConflictError', async () => {
    const session = await sessionWithHistory('tenant-a', 'c-idem');
    const body = { instructions: 'keep the schema decisions', keepRecentTokens: 1_000 };
    const first = await compact('tenant-a', 'c-idem', body, 'retry-1');
    expect(first.created).toBe(true);
    expect((await compact('tenant-a', 'c-idem', body, 'retry-1')).compaction.id).toBe(first.compaction.id);
    for (const other of [
      { ...body, instructions: 'something else' },
      { ...body, strategy: 'truncate' as const },
    ]) {
      await expect(compact('tenant-a', 'c-idem', other, 'retry-1')).rejects.toBeInstanceOf(ConflictError);
    }
    // Still the same once it finished: the key names that compaction, it starts no other.
    await complete(session, first.compaction.id);
    const later = await compact('tenant-a', 'c-idem', body, 'retry-1');
    expect(later).toMatchObject({
      created: false,
      compaction: { id: first.compaction.id, status: 'completed' },
    });
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(1);
    // A new key starts a new one.
    expect((await compact('tenant-a', 'c-idem', body, 'retry-2')).compaction.id).not.toBe(
      first.compaction.id,
    );
  });

  it('refuses keepRecentTokens above the window, naming the field, and writes nothing', async () => {
    const session = await sessionWithHistory('tenant-a', 'c-keep');
    const refused = await compact('tenant-a', 'c-keep', { keepRecentTokens: 8_001 }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(InvalidInput);
    expect((refused as InvalidInput).issues).toEqual([
      {
        path: 'body.keepRecentTokens',
        message: "keepRecentTokens (8001) is larger than the session's context window (8000)",
      },
    ]);
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(0);
  });

  it('past the tenant cap, refuses with TenantLimitReached and retryAfter, but joining is never refused', async () => {
    const limits = new TenantLimits({ maxActiveCompactions: 2 });
    for (const id of ['cap-1', 'cap-2', 'cap-3']) await sessionWithHistory('tenant-cap', id);
    const first = await compact('tenant-cap', 'cap-1', {}, 'k1', limits);
    await compact('tenant-cap', 'cap-2', {}, undefined, limits);
    const refused = await compact('tenant-cap', 'cap-3', {}, undefined, limits).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(TenantLimitReached);
    expect(refused).toMatchObject({ limit: 'active_compactions', retryAfterSeconds: 10 });
    expect((refused as Error).message).toBe(
      'this tenant already has 2 compactions pending or running (its limit); retry later',
    );
    // Joining the session's active compaction adds none, with or without its key.
    expect((await compact('tenant-cap', 'cap-1', {}, undefined, limits)).compaction.id).toBe(
      first.compaction.id,
    );
    expect((await compact('tenant-cap', 'cap-1', {}, 'k1', limits)).compaction.id).toBe(first.compaction.id);
    // Another tenant has its own places.
    await sessionWithHistory('tenant-other', 'cap-b');
    expect((await compact('tenant-other', 'cap-b', {}, undefined, limits)).created).toBe(true);
  });

  it("finds no session of another tenant's, and starts nothing for it", async () => {
    const session = await sessionWithHistory('tenant-a', 'c-mine');
    await expect(compact('tenant-b', 'c-mine')).rejects.toBeInstanceOf(SessionNotFound);
    await expect(requestPrune(t.resources, { tenantId: 'tenant-b', id: 'c-mine' })).rejects.toBeInstanceOf(
      SessionNotFound,
    );
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(0);
  });
});

describe('reportOverflow', () => {
  const overflow = { error: 'This model maximum context length is 128000 tokens', status: 400 };

  it('starts an emergency compaction for an overflow, unless the policy turned auto off', async () => {
    await sessionWithHistory('tenant-a', 'o-on');
    const answer = await reportOverflow(
      t.resources,
      t.limits,
      { tenantId: 'tenant-a', id: 'o-on' },
      overflow,
    );
    expect(answer).toMatchObject({ overflow: true, compaction: { reason: 'overflow', status: 'pending' } });

    await newSession(t, 'tenant-a', 'o-off', { policy: { auto: false } });
    const off = await reportOverflow(t.resources, t.limits, { tenantId: 'tenant-a', id: 'o-off' }, overflow);
    expect(off).toMatchObject({ overflow: true, compaction: null });
  });

  it('answers a report that is no overflow without writing anything', async () => {
    const session = await sessionWithHistory('tenant-a', 'o-none');
    const target = { tenantId: 'tenant-a', id: 'o-none' };
    const answer = await reportOverflow(t.resources, t.limits, target, {
      error: 'rate limited',
      status: 429,
    });
    expect(answer).toEqual({ overflow: false, kind: null, matched: null, compaction: null });
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(0);
  });

  it('past the tenant cap, refuses an overflow that would start a compaction', async () => {
    const limits = new TenantLimits({ maxActiveCompactions: 1 });
    await sessionWithHistory('tenant-full', 'o-1');
    await sessionWithHistory('tenant-full', 'o-2');
    await compact('tenant-full', 'o-1', {}, undefined, limits);
    await expect(
      reportOverflow(t.resources, limits, { tenantId: 'tenant-full', id: 'o-2' }, overflow),
    ).rejects.toBeInstanceOf(TenantLimitReached);
  });
});

describe('compactionsPage and compactionDetail', () => {
  it("pages newest first, refuses another session's compaction as a cursor, and hides other tenants'", async () => {
    const session = await sessionWithHistory('tenant-a', 'pg-1');
    await sessionWithHistory('tenant-a', 'pg-2');
    const first = await compact('tenant-a', 'pg-1');
    await complete(session, first.compaction.id);
    const second = await compact('tenant-a', 'pg-1');
    const page = await compactionsPage(t.database.db, { tenantId: 'tenant-a', id: 'pg-1' }, { limit: 1 });
    expect(page.compactions.map((c) => c.id)).toEqual([second.compaction.id]);
    expect(page.nextBefore).toBe(second.compaction.id);

    const cursor = await compactionsPage(
      t.database.db,
      { tenantId: 'tenant-a', id: 'pg-2' },
      { limit: 1, before: first.compaction.id },
    ).catch((error: unknown) => error);
    expect(cursor).toBeInstanceOf(InvalidInput);
    expect((cursor as InvalidInput).issues?.[0]?.path).toBe('querystring.before');

    expect(await compactionDetail(t.database.db, 'tenant-a', first.compaction.id)).toMatchObject({
      id: first.compaction.id,
      status: 'completed',
      steps: [],
    });
    await expect(compactionDetail(t.database.db, 'tenant-b', first.compaction.id)).rejects.toBeInstanceOf(
      CompactionNotFound,
    );
  });
});

describe('revertCompaction', () => {
  it('reverts the latest completed compaction, then refuses it again as not completed', async () => {
    const session = await sessionWithHistory('tenant-a', 'rv-ok');
    const { compaction } = await compact('tenant-a', 'rv-ok');
    await complete(session, compaction.id);
    const reverted = await revertCompaction(t.resources, 'tenant-a', compaction.id);
    expect(reverted.compaction).toMatchObject({ id: compaction.id, status: 'reverted' });
    expect(reverted.status.contextMessages).toBe(2);
    const again = await revertCompaction(t.resources, 'tenant-a', compaction.id).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConflictError);
    expect((again as ConflictError).details).toMatchObject({ reason: 'not_completed', status: 'reverted' });
  });

  it('refuses while another compaction of the session is active, and one still pending', async () => {
    const session = await sessionWithHistory('tenant-a', 'rv-busy');
    const done = await compact('tenant-a', 'rv-busy');
    await complete(session, done.compaction.id);
    const pending = await compact('tenant-a', 'rv-busy');

    const busy = await revertCompaction(t.resources, 'tenant-a', done.compaction.id).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(ConflictError);
    expect((busy as ConflictError).details).toMatchObject({
      reason: 'compaction_active',
      activeCompactionId: pending.compaction.id,
    });
    const notDone = await revertCompaction(t.resources, 'tenant-a', pending.compaction.id).catch(
      (e: unknown) => e,
    );
    expect((notDone as ConflictError).details).toMatchObject({ reason: 'not_completed', status: 'pending' });
  });

  it("is CompactionNotFound for another tenant's compaction and an unknown id", async () => {
    const session = await sessionWithHistory('tenant-a', 'rv-tenant');
    const { compaction } = await compact('tenant-a', 'rv-tenant');
    await complete(session, compaction.id);
    await expect(revertCompaction(t.resources, 'tenant-b', compaction.id)).rejects.toBeInstanceOf(
      CompactionNotFound,
    );
    await expect(revertCompaction(t.resources, 'tenant-a', 'cmp_missing')).rejects.toBeInstanceOf(
      CompactionNotFound,
    );
  });
});
