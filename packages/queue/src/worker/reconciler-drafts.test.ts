/**
 * A prepared draft (policy `prepare`) whose job is gone — Redis lost it, or BullMQ failed it —
 * would stay `pending` for good and block every new request on its boundary. One reconciler pass
 * retires it, and the prepare trigger can ask again; a draft whose job will still run is left to it.
 */
import { sql } from 'drizzle-orm';
import { inject, describe, expect, it } from 'vitest';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { PolicyInput } from '@compactor/core';
import { beginPreparedSummary, DRAFT_JOB_LOST, findPreparedSummary, type MessageInput } from '@compactor/db';
import { startPrepare } from '../jobs/dispatch';
import { useQueueHarness } from '../test-support/queue';
import { reconcileOnce } from './reconciler';
import type { RunningWorkers } from './workers';

const q = useQueueHarness();
const now = { graceMs: 0, stepTimeoutMs: 60_000 };

/** A 16,000-token window that prepares drafts (as prepare-takeover.test.ts's). */
const preparing: PolicyInput = { keepRecent: { autoRatio: 0.05 }, prune: false, prepare: { atRatio: 0.7 } };
const turns = (count: number): MessageInput[] =>
  Array.from({ length: count }, (_, i) => [
    {
      id: `u${i}`,
      role: 'user' as const,
      parts: [{ type: 'text' as const, text: `Step ${i}: ${'rework the exporter batching. '.repeat(30)}` }],
    },
    {
      id: `a${i}`,
      role: 'assistant' as const,
      parts: [{ type: 'text' as const, text: `Done ${i}. ${'Rows now flush per tenant. '.repeat(30)}` }],
    },
  ]).flat();
const seedPreparingSession = () => q.seedSession(turns(10), { policy: preparing, contextWindow: 16_000 });

/** The draft was requested ten minutes ago: well past the reconciler's step timeout. */
const ageDraft = (draftId: string) =>
  q.resources.db.execute(
    sql`update prepared_summaries set requested_at = now() - interval '10 minutes' where id = ${draftId}`,
  );

/** Resolves with the prepare job `jobId` once it completes on these workers (registered now). */
function prepareCompleted(running: RunningWorkers, jobId: string): Promise<Job> {
  const worker = running.workers.find((w) => w.name === 'prepare')!;
  return new Promise((resolve) => {
    const onCompleted = (job: Job) => {
      if (job.id !== jobId) return;
      worker.off('completed', onCompleted);
      resolve(job);
    };
    worker.on('completed', onCompleted);
  });
}

describe('reconciler: a draft whose job is gone', () => {
  it('is retired when Redis lost its job, and the prepare trigger then asks again on that boundary', async () => {
    const session = await seedPreparingSession();
    const { jobId: lostId } = (await startPrepare(q.dispatch, session, null, 0))!;
    await ageDraft(lostId);
    // Its job still waits in the queue: nothing to do.
    expect(await reconcileOnce(q.dispatch, now)).toMatchObject({ draftsRetired: 0, skippedLocked: false });
    expect(await findPreparedSummary(q.resources.db, session.pk)).toMatchObject({
      id: lostId,
      status: 'pending',
    });

    // Its job began reading the view, then Redis lost it.
    await beginPreparedSummary(q.resources.db, session.pk, lostId, session.lastSeq);
    await q.queues.queue('prepare').remove(lostId);
    expect(await q.queues.queue('prepare').getJob(lostId)).toBeUndefined();
    // Pending for good until then: the trigger cannot ask again on this boundary.
    expect(await startPrepare(q.dispatch, session, null, 0)).toBeNull();

    expect(await reconcileOnce(q.dispatch, now)).toMatchObject({ draftsRetired: 1 });
    expect(await findPreparedSummary(q.resources.db, session.pk)).toMatchObject({
      id: lostId,
      status: 'failed',
      errorCode: DRAFT_JOB_LOST,
    });
    expect((await reconcileOnce(q.dispatch, now)).draftsRetired).toBe(0);

    const again = await startPrepare(q.dispatch, session, null, 0);
    expect(again).not.toBeNull();
    expect(again!.jobId).not.toBe(lostId);
    const running = q.startWorkers();
    const job = await prepareCompleted(running, again!.jobId);
    expect(job.returnvalue).toMatchObject({ status: 'ready' });
    expect(await findPreparedSummary(q.resources.db, session.pk)).toMatchObject({
      id: again!.jobId,
      status: 'ready',
      baseCompactionId: null,
    });
  });

  it('is left alone while its job runs, and retired once BullMQ failed the job', async () => {
    const session = await seedPreparingSession();
    const { jobId: draftId } = (await startPrepare(q.dispatch, session, null, 0))!;
    await ageDraft(draftId);
    // A worker holds the job (its lock renewed) until told to fail it, as one that stalled out would be.
    let fail: () => void = () => undefined;
    const failNow = new Promise<void>((resolve) => (fail = resolve));
    const holder = new Worker(
      'prepare',
      async () => {
        await failNow;
        throw new UnrecoverableError('its workers died');
      },
      { connection: { url: inject('redisUrl'), maxRetriesPerRequest: null }, prefix: q.prefix },
    );
    try {
      const active = new Promise<void>((resolve) => holder.once('active', () => resolve()));
      const failed = new Promise<void>((resolve) => holder.once('failed', () => resolve()));
      await active;
      expect(await q.queues.queue('prepare').getJobState(draftId)).toBe('active');
      expect((await reconcileOnce(q.dispatch, now)).draftsRetired).toBe(0);
      expect((await findPreparedSummary(q.resources.db, session.pk))?.status).toBe('pending');

      fail();
      await failed;
      expect(await q.queues.queue('prepare').getJobState(draftId)).toBe('failed');
      expect((await reconcileOnce(q.dispatch, now)).draftsRetired).toBe(1);
      expect(await findPreparedSummary(q.resources.db, session.pk)).toMatchObject({
        status: 'failed',
        errorCode: DRAFT_JOB_LOST,
      });
      expect(await startPrepare(q.dispatch, session, null, 0)).not.toBeNull();
    } finally {
      await holder.close();
    }
  });

  it('is reached past old drafts whose jobs still wait: each pass resumes after the last it checked', async () => {
    const [waiting, lost] = [await seedPreparingSession(), await seedPreparingSession()];
    const { jobId: waitingId } = (await startPrepare(q.dispatch, waiting, null, 0))!;
    const { jobId: lostId } = (await startPrepare(q.dispatch, lost, null, 0))!;
    await ageDraft(waitingId);
    await ageDraft(lostId);
    await q.queues.queue('prepare').remove(lostId);
    // One draft a pass: from the oldest every time, the waiting draft would fill each one.
    const oneAPass = { ...now, batch: 1 };
    expect((await reconcileOnce(q.dispatch, oneAPass)).draftsRetired).toBe(0);
    expect((await reconcileOnce(q.dispatch, oneAPass)).draftsRetired).toBe(0);
    const draftCursor = { after: null };
    expect((await reconcileOnce(q.dispatch, { ...oneAPass, draftCursor })).draftsRetired).toBe(0);
    expect((await reconcileOnce(q.dispatch, { ...oneAPass, draftCursor })).draftsRetired).toBe(1);
    expect(await findPreparedSummary(q.resources.db, lost.pk)).toMatchObject({ status: 'failed' });
    expect(await findPreparedSummary(q.resources.db, waiting.pk)).toMatchObject({ status: 'pending' });
  });

  it('is left to its job while younger than the step timeout, whatever Redis holds', async () => {
    const session = await seedPreparingSession();
    const { jobId: draftId } = (await startPrepare(q.dispatch, session, null, 0))!;
    await q.queues.queue('prepare').remove(draftId);
    expect((await reconcileOnce(q.dispatch, now)).draftsRetired).toBe(0);
    expect(await findPreparedSummary(q.resources.db, session.pk)).toMatchObject({
      id: draftId,
      status: 'pending',
    });
  });
});
