/**
 * Auto compactions past the tenant's cap wait their turn: deferred in Postgres, started by a
 * worker when one of the tenant's compactions ends, or by the reconciler when that worker died
 * first. Starting one re-checks the session, never starts it twice, and drops what a newer
 * compaction of the session covered.
 */
import { describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import { findDeferredCompaction, listCompactions, type SessionRow } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { ActiveCompactionLimitError } from '@compactor/workflow';
import { reconcileOnce } from '../worker/reconciler';
import { useQueueHarness } from '../test-support/queue';
import { startCompaction, startDeferredCompactions } from './dispatch';

const q = useQueueHarness();
const cap = { maxActivePerTenant: 1, deferAtCap: true };

/** A tenant at its cap of 1 (a manual compaction on one session) and a second session. */
async function tenantAtCap(tenantId: string) {
  const busy = await q.seedSession(generateCodingSession({ turns: 2 }), { tenantId });
  const waiting = await q.seedSession(generateCodingSession({ turns: 2 }), { tenantId });
  const { compaction: active } = await startCompaction(q.dispatch, busy, { reason: 'manual' }, cap);
  return { busy, waiting, active };
}

/** An auto request past the cap: refused now, and recorded to wait. */
async function defer(session: SessionRow) {
  const refused = await startCompaction(q.dispatch, session, { reason: 'auto' }, cap).catch(
    (e: unknown) => e,
  );
  expect(refused).toBeInstanceOf(ActiveCompactionLimitError);
  expect(refused).toMatchObject({ deferred: true, limit: 1 });
  expect(await findDeferredCompaction(q.resources.db, session.pk)).toMatchObject({
    reason: 'auto',
    maxActive: 1,
  });
}

const compactionsOf = (session: SessionRow) => listCompactions(q.resources.db, session.pk, { limit: 10 });

describe('deferred auto compactions', () => {
  it("start when one of the tenant's compactions ends, and complete", async () => {
    const { waiting, active } = await tenantAtCap('defer-end');
    await defer(waiting);
    expect(await compactionsOf(waiting)).toEqual([]);
    const events = await q.record(waiting.pk);

    q.startWorkers();
    await q.waitForStatus(active.id, ['completed']);
    const [started] = await vi.waitFor(
      async () => {
        const rows = await compactionsOf(waiting);
        if (rows[0]?.status !== 'completed') throw new Error('not yet');
        return rows;
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(started).toMatchObject({ reason: 'auto', status: 'completed' });
    expect(await findDeferredCompaction(q.resources.db, waiting.pk)).toBeNull();
    await vi.waitFor(() => expect(events.map((e) => e.type)).toContain('session.compacted'));
    expect(events[0]).toMatchObject({ type: 'compaction.requested', compactionId: started!.id });
  });

  it('lose nothing when the worker dies before starting them: the reconciler does', async () => {
    const { waiting, active } = await tenantAtCap('defer-crash');
    await defer(waiting);
    // A worker whose compaction ended, but which died before it could start the deferred one.
    q.startWorkers({ on: {} });
    await q.waitForStatus(active.id, ['completed']);
    expect(await compactionsOf(waiting)).toEqual([]);
    expect(await findDeferredCompaction(q.resources.db, waiting.pk)).not.toBeNull();

    const report = await reconcileOnce(q.dispatch, { graceMs: 0, stepTimeoutMs: 60_000 });
    expect(report.deferredStarted).toBe(1);
    const [started] = await compactionsOf(waiting);
    expect(await q.waitForStatus(started!.id, ['completed'])).toMatchObject({ reason: 'auto' });
    expect(await findDeferredCompaction(q.resources.db, waiting.pk)).toBeNull();
    expect((await reconcileOnce(q.dispatch, { graceMs: 0, stepTimeoutMs: 60_000 })).deferredStarted).toBe(0);
  });

  it('wait while the tenant is still at its cap, and start once however many ask', async () => {
    const { waiting, active } = await tenantAtCap('defer-once');
    await defer(waiting);
    expect(await startDeferredCompactions(q.dispatch, 'defer-once')).toEqual([]);
    expect(await findDeferredCompaction(q.resources.db, waiting.pk)).not.toBeNull();

    await q.resources.db.execute(
      sql`update compactions set status = 'failed', finished_at = now() where id = ${active.id}`,
    );
    const [one, two, three] = await Promise.all([
      startDeferredCompactions(q.dispatch, 'defer-once'),
      startDeferredCompactions(q.dispatch, 'defer-once'),
      reconcileOnce(q.dispatch, { graceMs: 0, stepTimeoutMs: 60_000 }),
    ]);
    expect(one.length + two.length + three.deferredStarted).toBe(1);
    expect((await compactionsOf(waiting)).map((c) => c.reason)).toEqual(['auto']);
  });

  it('are dropped, not started, when a compaction of the session came since, or the session is gone', async () => {
    const { busy, waiting, active } = await tenantAtCap('defer-drop');
    const gone = await q.seedSession(generateCodingSession({ turns: 2 }), { tenantId: 'defer-drop' });
    await defer(waiting);
    await defer(gone);
    // A request the cap does not hold (a worker's follow-up) compacts the session meanwhile.
    const { compaction: followUp } = await startCompaction(q.dispatch, waiting, { reason: 'auto' });
    await q.resources.db.execute(
      sql`update compactions set status = 'completed', finished_at = now() where id in (${active.id}, ${followUp.id})`,
    );
    await q.resources.db.execute(sql`delete from sessions where pk = ${gone.pk}`);

    expect(await findDeferredCompaction(q.resources.db, gone.pk)).toBeNull();
    expect(await startDeferredCompactions(q.dispatch, 'defer-drop')).toEqual([]);
    expect(await findDeferredCompaction(q.resources.db, waiting.pk)).toBeNull();
    expect((await compactionsOf(waiting)).map((c) => c.id)).toEqual([followUp.id]);
    expect(await compactionsOf(busy)).toHaveLength(1);
  });

  it('are not recorded for a session whose compaction is already active', async () => {
    const { busy } = await tenantAtCap('defer-active');
    const joined = await startCompaction(q.dispatch, busy, { reason: 'auto' }, cap);
    expect(joined.created).toBe(false);
    expect(await findDeferredCompaction(q.resources.db, busy.pk)).toBeNull();
  });
});
