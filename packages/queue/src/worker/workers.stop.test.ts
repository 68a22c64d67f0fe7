import { once } from 'node:events';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { findCompaction, listCompactionSteps } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { startCompaction } from '../jobs/dispatch';
import { useQueueHarness } from '../test-support/queue';
import type { WorkflowLog } from '@compactor/workflow';

/**
 * How a worker stops taking work: a shutdown that drains, a shutdown past its bound, and a job
 * whose lock is lost while it waits on the LLM. In each, a compaction ends completed once, with
 * one summary, whichever worker finishes it.
 */
const q = useQueueHarness();

/**
 * Short locks and stall checks, in every test of the file: the stall check's interval is a key
 * in Redis that the last checker sets for the whole queue, so one worker with the 30 s default
 * would hold off every other worker's check for 30 s.
 */
const fast = { lockDurationMs: 1_000, stalledIntervalMs: 500 };

// A failed assertion must not leave the stub slow for the next test.
afterEach(() => q.stub.setFaults({}));

/** Messages a compaction wrote into its session (the summary pair): two when it wrote once. */
async function summaryMessagesOf(compactionId: string): Promise<number> {
  const { rows } = await q.resources.db.execute<{ n: number }>(
    sql`select count(*)::int as n from messages where compaction_id = ${compactionId}`,
  );
  return rows[0]!.n;
}

/** Completed by a later try than the interrupted one, with one summary and one finalize. */
async function expectTakenOverOnce(compactionId: string): Promise<void> {
  const done = await q.waitForStatus(compactionId, ['completed', 'failed']);
  expect(done).toMatchObject({ status: 'completed', details: { writtenBy: 'llm' } });
  expect(done.attempts).toBeGreaterThanOrEqual(2);
  expect(await summaryMessagesOf(compactionId)).toBe(2);
  const finalized = (await listCompactionSteps(q.resources.db, compactionId)).filter(
    (s) => s.step === 'finalize' && s.status === 'completed',
  );
  expect(finalized).toHaveLength(1);
}

/** A log that keeps its warnings' messages (never message text: fields are ids). */
function recordingLog(): WorkflowLog & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info: () => undefined, warn: (_fields, message) => warnings.push(message) };
}

describe('a worker that stops', () => {
  it('close() stops taking jobs and lets the running compaction finish (drained)', async () => {
    const [first, second] = await Promise.all([
      q.seedSession(generateCodingSession({ turns: 4 })),
      q.seedSession(generateCodingSession({ turns: 4 })),
    ]);
    q.stub.setFaults({ latencyMs: 800 });
    const workers = q.startWorkers(fast);
    const summarizing = once(q.stub.events, 'request');
    const running = (await startCompaction(q.dispatch, first!, { reason: 'manual' })).compaction;
    await summarizing;

    const closing = workers.close(10_000);
    // Requested while the worker drains: it must wait for the next worker.
    const waiting = (await startCompaction(q.dispatch, second!, { reason: 'manual' })).compaction;
    expect(await closing).toEqual({ drained: true });

    expect(await findCompaction(q.resources.db, running.id)).toMatchObject({
      status: 'completed',
      attempts: 1,
      details: { writtenBy: 'llm' },
    });
    expect(await findCompaction(q.resources.db, waiting.id)).toMatchObject({ status: 'pending' });
    // Still queued (a compaction waits as `prioritized`: its rank in its tenant's backlog).
    expect(
      await q.queues
        .queue('compact')
        .getJob(waiting.id)
        .then((job) => job?.getState()),
    ).toBe('prioritized');

    q.stub.setFaults({});
    q.startWorkers(fast);
    expect(await q.waitForStatus(waiting.id, ['completed', 'failed'])).toMatchObject({ status: 'completed' });
    expect(await summaryMessagesOf(running.id)).toBe(2);
    expect(await summaryMessagesOf(waiting.id)).toBe(2);
  });

  it('past its bound, close() cancels the running compaction; the next worker resumes it with one summary', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }));
    q.stub.setFaults({ latencyMs: 5_000 });
    const workers = q.startWorkers(fast);
    const summarizing = once(q.stub.events, 'request');
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    await summarizing;
    const clientClosed = once(q.stub.events, 'client-closed');

    const started = Date.now();
    expect(await workers.close(300)).toEqual({ drained: false });
    // The bound, plus at most the 2 s the forced close may take (and some slack for a busy machine).
    expect(Date.now() - started).toBeLessThan(4_000);
    // The cancelled try hung up on the LLM instead of paying for an answer it would not use.
    await clientClosed;
    const interrupted = await findCompaction(q.resources.db, compaction.id);
    expect(interrupted).toMatchObject({ status: 'running', step: 'summarize' });
    expect(await summaryMessagesOf(compaction.id)).toBe(0);

    q.stub.setFaults({});
    q.startWorkers(fast);
    await expectTakenOverOnce(compaction.id);
  });

  it('a job whose lock is lost is cancelled; the try that takes it over writes the one summary', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }));
    q.stub.setFaults({ latencyMs: 3_000 });
    const log = recordingLog();
    // Lock renewal (every ~500 ms here) must notice the lost lock before a stall check does: a
    // stall check first would hand the job back to this worker under the same id, whose next
    // renewal then succeeds, and the first try would never be cancelled.
    q.startWorkers({ ...fast, stalledIntervalMs: 2_000 }, { log });
    const summarizing = once(q.stub.events, 'request');
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    await summarizing;
    const clientClosed = once(q.stub.events, 'client-closed');

    // What a stalled process or a Redis failover does to a lock: it is simply gone.
    q.stub.setFaults({});
    expect(await q.redis.del(`${q.prefix}:compact:${compaction.id}:lock`)).toBe(1);
    await clientClosed;
    expect(log.warnings).toContain('job lock lost; cancelled');

    await expectTakenOverOnce(compaction.id);
  });
});

describe('a job that can never succeed', () => {
  it('a payload that does not parse fails at once, without retries (UnrecoverableError)', async () => {
    q.startWorkers(fast);
    const queue = q.queues.queue('compact');
    const job = await queue.add('compact', { compactionId: '' }, { jobId: 'not-a-compaction', attempts: 3 });
    await expect.poll(() => job.getState(), { timeout: 30_000 }).toBe('failed');
    const failed = await queue.getJob(job.id!);
    expect(failed?.attemptsMade).toBe(1);
    expect(failed?.failedReason).toMatch(/invalid compact payload/);
  });
});
