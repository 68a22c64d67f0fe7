import { describe, expect, it } from 'vitest';
import {
  findCompaction,
  insertOutboxEntries,
  listUndispatchedOutbox,
  updateCompaction,
  withReconcilerLock,
} from '@compactor/db';
import { sql } from 'drizzle-orm';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { startCompaction } from '../jobs/dispatch';
import { requestCompaction } from '@compactor/workflow';
import { useQueueHarness } from '../test-support/queue';
import { reconcileOnce } from './reconciler';

const q = useQueueHarness();
const deps = () => q.dispatch;
const now = { graceMs: 0, stepTimeoutMs: 60_000 };

describe('reconciler: Postgres is the system of record', () => {
  it('enqueues a compaction whose process died between commit and enqueue', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 3 }));
    // What startCompaction's transaction commits, without the enqueue that follows it.
    const { compaction } = await q.resources.db.transaction(async (tx) => {
      const requested = await requestCompaction(tx, session, { reason: 'manual' });
      await insertOutboxEntries(tx, [
        {
          jobName: 'compact',
          jobId: requested.compaction.id,
          payload: { compactionId: requested.compaction.id },
        },
      ]);
      return requested;
    });
    expect(await q.queues.queue('compact').getJob(compaction.id)).toBeUndefined();

    const report = await reconcileOnce(deps(), now);
    expect(report).toMatchObject({ dispatched: 1, skippedLocked: false });
    expect(await listUndispatchedOutbox(q.resources.db, { olderThanMs: 0, limit: 10 })).toEqual([]);
    q.startWorkers();
    await q.waitForStatus(compaction.id, ['completed']);
  });

  it('re-enqueues pending work after Redis lost every job (FLUSHALL of our keys)', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 3 }));
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    await q.queues.queue('compact').obliterate({ force: true });
    expect(await q.queues.queue('compact').getJob(compaction.id)).toBeUndefined();

    const report = await reconcileOnce(deps(), now);
    expect(report.redriven).toBe(1);
    q.startWorkers();
    await q.waitForStatus(compaction.id, ['completed']);
    // A second pass finds nothing to do.
    expect(await reconcileOnce(deps(), now)).toMatchObject({ dispatched: 0, redriven: 0 });
  });

  it('re-drives a running compaction whose worker died, and leaves a live job alone', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 3 }));
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    // The worker claimed it, then vanished (its job is gone with it); silent for 10 minutes.
    await updateCompaction(q.resources.db, compaction.id, { status: 'running', attempts: 1, fence: 1 });
    await q.resources.db.execute(
      sql`update compactions set progress_at = now() - interval '10 minutes' where id = ${compaction.id}`,
    );
    // While the job is still waiting in the queue, nothing is done.
    expect((await reconcileOnce(deps(), now)).redriven).toBe(0);
    await (await q.queues.queue('compact').getJob(compaction.id))!.remove();
    expect((await reconcileOnce(deps(), now)).redriven).toBe(1);
    q.startWorkers();
    const done = await q.waitForStatus(compaction.id, ['completed']);
    expect(done.fence).toBe(2);
  });

  it('leaves a compaction whose finished job cannot be removed for the next pass, uncounted', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 3 }));
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    await updateCompaction(q.resources.db, compaction.id, { status: 'running', attempts: 1, fence: 1 });
    await q.resources.db.execute(
      sql`update compactions set progress_at = now() - interval '10 minutes' where id = ${compaction.id}`,
    );
    // Its job ended (a worker was killed after BullMQ marked it done) and BullMQ refuses to remove it.
    const real = q.queues.queue('compact');
    const finished = { getState: async () => 'completed', remove: () => Promise.reject(new Error('locked')) };
    const queue = new Proxy(real, {
      get: (target, key) =>
        key === 'getJob' ? async () => finished : (Reflect.get(target, key, target) as unknown),
    });
    const refusing = { ...deps(), queues: { ...q.queues, queue: () => queue } as typeof q.queues };
    expect(await reconcileOnce(refusing, now)).toMatchObject({ redriven: 0 });
    // Once it can be removed, the next pass re-drives it.
    expect((await reconcileOnce(deps(), now)).redriven).toBe(0); // its real job is still waiting
    await (await real.getJob(compaction.id))!.remove();
    expect((await reconcileOnce(deps(), now)).redriven).toBe(1);
  });

  it('gives up on a compaction that every worker crashed on', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 3 }));
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    await q.queues.queue('compact').obliterate({ force: true });
    await updateCompaction(q.resources.db, compaction.id, { status: 'running', attempts: 9, fence: 9 });
    await q.resources.db.execute(
      sql`update compactions set progress_at = now() - interval '10 minutes' where id = ${compaction.id}`,
    );
    expect(await reconcileOnce(deps(), { ...now, maxClaims: 9 })).toMatchObject({ abandoned: 1 });
    expect(await findCompaction(q.resources.db, compaction.id)).toMatchObject({
      status: 'failed',
      errorCode: 'attempts_exhausted',
    });
  });

  it('runs one pass at a time across processes', async () => {
    // Another process holds the lock for the whole of this pass.
    const inner = await withReconcilerLock(q.resources.db, () => reconcileOnce(deps(), now));
    expect(inner).toMatchObject({ skippedLocked: true });
    expect(await reconcileOnce(deps(), now)).toMatchObject({ skippedLocked: false });
  });
});
