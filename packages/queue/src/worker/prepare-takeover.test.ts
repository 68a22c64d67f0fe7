/**
 * A worker process killed while it writes a prepared summary (policy `prepare`): its prepare job
 * is taken over as a compaction's is (the same lock, the same stall check), and a compaction that
 * wants the draft stops waiting for it once the draft's lock is gone, instead of waiting out
 * DRAFT_WAIT_LIMIT_MS for a writer that will never finish.
 */
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { Job } from 'bullmq';
import type { PolicyInput } from '@compactor/core';
import {
  beginPreparedSummary,
  findCompaction,
  findPreparedSummary,
  requestPreparedSummary,
  type MessageInput,
} from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import type { WorkflowLog } from '@compactor/workflow';
import { startCompaction, startPrepare } from '../jobs/dispatch';
import type { JobName } from '../jobs/catalog';
import { startKillableWorker, type KillableWorker } from '../test-support/killable-worker';
import { useQueueHarness } from '../test-support/queue';
import { jobLockSettings, type RunningWorkers } from './workers';

const q = useQueueHarness();

/**
 * The killed process and the worker after it run with the same short locks and stall checks
 * (the stall check's interval is a key every checker of a queue shares: see workers.stop.test.ts).
 */
const locks = { lockDurationMs: 1_000, stalledIntervalMs: 500 };

let doomed: KillableWorker | undefined;
afterEach(async () => {
  await doomed?.kill();
  doomed = undefined;
  q.stub.setFaults({});
});

/** A 16,000-token window that prepares drafts; auto compactions keep 0.05 × 16,000 = 800 tokens. */
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

/** A worker process on this file's database, queues and stub, with {@link locks}. */
async function startDoomedWorker(): Promise<KillableWorker> {
  const { rows } = await q.resources.db.execute<{ name: string }>(sql`select current_database() as name`);
  const databaseUrl = new URL(inject('databaseUrl'));
  databaseUrl.pathname = `/${rows[0]!.name}`;
  doomed = await startKillableWorker({
    databaseUrl: databaseUrl.toString(),
    redisUrl: inject('redisUrl'),
    prefix: q.prefix,
    llmUrl: q.stub.url,
    policy: q.queues.policy,
    ...locks,
  });
  return doomed;
}

/** Resolves once the stub has received `count` more requests (registered now). */
function stubRequests(count: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    const onRequest = () => {
      if (++seen < count) return;
      q.stub.events.off('request', onRequest);
      resolve();
    };
    q.stub.events.on('request', onRequest);
  });
}

/** Resolves when job `jobId` of `queue` completes on these workers (registered now). */
function completedOn(running: RunningWorkers, queue: JobName, jobId: string): Promise<Job> {
  const worker = running.workers.find((w) => w.name === queue)!;
  return new Promise((resolve) => {
    const onCompleted = (job: Job) => {
      if (job.id !== jobId) return;
      worker.off('completed', onCompleted);
      resolve(job);
    };
    worker.on('completed', onCompleted);
  });
}

/** `queue:jobId` of every job these workers' stall checks handed back. */
function stalledOn(running: RunningWorkers): string[] {
  const stalled: string[] = [];
  for (const worker of running.workers)
    worker.on('stalled', (jobId: string) => stalled.push(`${worker.name}:${jobId}`));
  return stalled;
}

/** A log that keeps its info lines' fields (ids and codes, never message text). */
function recordingLog(): WorkflowLog & {
  lines: Array<{ message: string; fields: Record<string, unknown> }>;
} {
  const lines: Array<{ message: string; fields: Record<string, unknown> }> = [];
  return { lines, info: (fields, message) => lines.push({ message, fields }), warn: () => undefined };
}
const draftWaits = (log: ReturnType<typeof recordingLog>) =>
  log.lines.filter((l) => l.message === 'waited for the prepared summary being written').map((l) => l.fields);

const lockKey = (queue: JobName, jobId: string) => `${q.prefix}:${queue}:${jobId}:lock`;

describe('a worker killed while it writes a draft', () => {
  it('every queue holds its jobs with one lock and stall setting', () => {
    expect(jobLockSettings({})).toEqual({
      lockDuration: 30_000,
      stalledInterval: 30_000,
      maxStalledCount: 2,
    });
    const running = q.startWorkers(locks);
    const settings = running.workers.map((w) => ({
      queue: w.name,
      lockDuration: w.opts.lockDuration,
      stalledInterval: w.opts.stalledInterval,
      maxStalledCount: w.opts.maxStalledCount,
    }));
    expect(settings).toEqual(
      ['compact', 'prune', 'prepare'].map((queue) => ({ queue, ...jobLockSettings(locks) })),
    );
  });

  it('its prepare job is taken over by the next worker’s stall check, as its compaction is', async () => {
    const [coding, drafting] = await Promise.all([
      q.seedSession(generateCodingSession({ turns: 4 })),
      seedPreparingSession(),
    ]);
    // Both summarizer calls of the doomed process hang; the next worker's are answered.
    q.stub.setFaults({ latencyMs: 600_000, times: 2 });
    const dying = await startDoomedWorker();
    const inFlight = stubRequests(2);
    const { compaction } = await startCompaction(q.dispatch, coding, { reason: 'manual' });
    const { jobId: draftId } = (await startPrepare(q.dispatch, drafting, null, 0))!;
    await inFlight;
    expect(await findPreparedSummary(q.resources.db, drafting.pk)).toMatchObject({ status: 'pending' });
    // Both jobs hold a lock of the same duration, renewed by the process that is about to die.
    for (const key of [lockKey('compact', compaction.id), lockKey('prepare', draftId)]) {
      const ttl = await q.redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(locks.lockDurationMs);
    }

    await dying.kill();
    const next = q.startWorkers(locks);
    const stalled = stalledOn(next);
    const draftDone = completedOn(next, 'prepare', draftId);
    const compactionDone = completedOn(next, 'compact', compaction.id);

    const [draftJob, compactionJob] = await Promise.all([draftDone, compactionDone]);
    expect(stalled).toEqual(expect.arrayContaining([`compact:${compaction.id}`, `prepare:${draftId}`]));
    // Each handed back once by the stall check, then run to its end by the next worker.
    expect([draftJob.stalledCounter, compactionJob.stalledCounter]).toEqual([1, 1]);
    expect(draftJob.returnvalue).toMatchObject({ status: 'ready' });
    expect(await findPreparedSummary(q.resources.db, drafting.pk)).toMatchObject({
      id: draftId,
      status: 'ready',
    });
    expect(await findCompaction(q.resources.db, compaction.id)).toMatchObject({
      status: 'completed',
      attempts: 2,
    });
  });

  it('a compaction that wants the draft stops waiting once the draft’s lock is gone, and summarises itself', async () => {
    const session = await seedPreparingSession();
    q.stub.setFaults({ latencyMs: 600_000, times: 1 });
    const dying = await startDoomedWorker();
    const inFlight = stubRequests(1);
    const { jobId: draftId } = (await startPrepare(q.dispatch, session, null, 0))!;
    await inFlight;

    // The prepare queue's stall check is held back (as when another checker ran just now), so the
    // job cannot be taken over meanwhile: the draft can only end by the compaction giving up on it.
    const stallCheck = `${q.prefix}:prepare:stalled-check`;
    await q.redis.set(stallCheck, Date.now(), 'PX', 120_000);
    const log = recordingLog();
    const next = q.startWorkers(locks, { log });
    const stalled = stalledOn(next);
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'auto' });
    await dying.kill();

    const done = await q.waitForStatus(compaction.id, ['completed', 'failed'], 60_000);
    expect(done).toMatchObject({ status: 'completed', details: { writtenBy: 'llm' } });
    expect(done.details).not.toHaveProperty('prepared');
    expect(draftWaits(log)).toEqual([
      expect.objectContaining({ draftId, status: 'pending', end: 'writer_gone' }),
    ]);

    // Released, the stall check hands the job to the next worker, which gives the draft up.
    const draftDone = completedOn(next, 'prepare', draftId);
    await q.redis.del(stallCheck);
    expect((await draftDone).returnvalue).toEqual({ status: 'skipped', code: 'boundary_moved' });
    expect(stalled).toContain(`prepare:${draftId}`);
  });

  it('a draft whose job is gone (Redis lost it) is not waited for', async () => {
    const session = await seedPreparingSession();
    const draftId = `prp_lost_${session.pk}`;
    await requestPreparedSummary(q.resources.db, {
      sessionPk: session.pk,
      id: draftId,
      baseCompactionId: null,
      headroomTokens: 0,
      jobName: 'prepare',
    });
    // Begun by a job of which Redis kept nothing: the row stays pending with no lock behind it.
    await beginPreparedSummary(q.resources.db, session.pk, draftId, session.lastSeq);
    const log = recordingLog();
    q.startWorkers(locks, { log });
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'auto' });

    const done = await q.waitForStatus(compaction.id, ['completed', 'failed'], 60_000);
    expect(done).toMatchObject({ status: 'completed', details: { writtenBy: 'llm' } });
    expect(draftWaits(log)).toEqual([
      expect.objectContaining({ draftId, status: 'pending', end: 'writer_gone' }),
    ]);
  });
});
