import { describe, expect, it, vi } from 'vitest';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { startCompaction, startPrune } from '../jobs/dispatch';
import { useQueueHarness } from '../test-support/queue';
import { startReconciler } from './reconciler';
import type { WorkerEventMap, WorkerListeners } from './worker-events';

const q = useQueueHarness();

describe('worker events', () => {
  it('report every job try and every compaction that ended, each with its named payload', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }));
    const jobs: Array<WorkerEventMap['job.ended']> = [];
    const ended: string[] = [];
    q.startWorkers({
      on: {
        'job.ended': (payload) => void jobs.push(payload),
        // Awaited before the job completes: the job is still active while it runs.
        'compaction.ended': async ({ compaction }) => {
          const job = await q.queues.queue('compact').getJob(compaction.id);
          ended.push(`${compaction.id}:${compaction.status}:${await job?.getState()}`);
        },
      },
    });
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    await q.waitForStatus(compaction.id, ['completed']);
    await vi.waitFor(() => expect(jobs).toHaveLength(1));
    await startPrune(q.dispatch, session, 'manual');
    await vi.waitFor(() => expect(jobs).toHaveLength(2));

    expect(ended).toEqual([`${compaction.id}:completed:active`]);
    expect(jobs).toEqual([
      { queue: 'compact', outcome: 'completed', durationMs: expect.any(Number) },
      // A prune job's outcome is how it ended, whatever it pruned.
      { queue: 'prune', outcome: 'completed', durationMs: expect.any(Number) },
    ]);
    expect(jobs.every((job) => job.durationMs > 0)).toBe(true);
  });

  it('report a compaction that is no longer active as inactive, without ending it again', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 3 }));
    const jobs: Array<WorkerEventMap['job.ended']> = [];
    const ended = vi.fn();
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    q.startWorkers({ on: { 'job.ended': (payload) => void jobs.push(payload), 'compaction.ended': ended } });
    await q.waitForStatus(compaction.id, ['completed']);
    await vi.waitFor(() => expect(jobs).toHaveLength(1));
    // The same compaction's job again: the row is finished, so the try does nothing.
    await q.queues
      .queue('compact')
      .getJob(compaction.id)
      .then((job) => job?.remove());
    await q.queues.enqueue('compact', compaction.id, { compactionId: compaction.id });
    await vi.waitFor(() => expect(jobs).toHaveLength(2));
    expect(jobs.map((job) => job.outcome)).toEqual(['completed', 'inactive']);
    expect(ended).toHaveBeenCalledTimes(1);
  });

  it("report each reconciler pass's report", async () => {
    const passes: Array<WorkerEventMap['reconciler.passed']> = [];
    const on: WorkerListeners = { 'reconciler.passed': (payload) => void passes.push(payload) };
    const reconciler = startReconciler(q.dispatch, { intervalMs: 20, stepTimeoutMs: 60_000, on });
    try {
      await vi.waitFor(() => expect(passes.length).toBeGreaterThanOrEqual(2));
    } finally {
      await reconciler.stop();
    }
    expect(passes[0]).toEqual({
      report: expect.objectContaining({ dispatched: expect.any(Number), redriven: expect.any(Number) }),
    });
  });
});
