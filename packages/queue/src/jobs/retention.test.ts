import { describe, expect, it } from 'vitest';
import { useQueueHarness } from '../test-support/queue';
import { jobOptions } from './catalog';

/**
 * Finished jobs are kept for inspection, but only so many (the catalog's `removeOnComplete` /
 * `removeOnFail`): Redis must not grow with every compaction ever run.
 */
const q = useQueueHarness({
  keepCompleted: { count: 2, ageSeconds: 3600 },
  keepFailed: { count: 1, ageSeconds: 3600 },
});

describe('finished jobs are kept in bounded numbers', () => {
  it('keeps at most the policy’s count of completed and of failed jobs', async () => {
    q.startWorkers();
    const compact = q.queues.queue('compact');
    const idle = () =>
      expect.poll(() => compact.getJobCounts('waiting', 'active', 'delayed'), { timeout: 30_000 });

    // A compaction that does not exist (any more) completes its job at once, as "inactive".
    for (let i = 0; i < 5; i++) await q.queues.enqueue('compact', `gone-${i}`, { compactionId: `gone-${i}` });
    await idle().toEqual({ waiting: 0, active: 0, delayed: 0 });
    const completed = await compact.getJobs(['completed']);
    expect(completed).toHaveLength(2);
    for (const job of completed) expect(job.returnvalue).toMatchObject({ status: 'inactive' });

    // A payload that can never parse fails at once; the catalog's options keep the newest failure.
    for (let i = 0; i < 3; i++) {
      const id = `broken-${i}`;
      await compact.add('compact', {}, jobOptions(q.queues.policy, 'compact', id, { compactionId: id }));
    }
    await idle().toEqual({ waiting: 0, active: 0, delayed: 0 });
    expect(await compact.getJobCounts('failed', 'completed')).toEqual({ failed: 1, completed: 2 });
  });
});
