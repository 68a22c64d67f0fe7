/**
 * A compaction outrun by appends (messages that arrived while it ran leave the session over its
 * trigger) is followed by another at once, requested in the completing transaction; one that was
 * itself ineffective, or that nothing outran, is not (the next append's trigger decides, with
 * its loop guards).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PolicyInput } from '@compactor/core';
import {
  claimCompaction,
  findActiveCompaction,
  findCompaction,
  findLatestCompletedCompaction,
  listCompactionSteps,
  listCompactions,
  type CompactionWithOutbox,
  type SessionRow,
} from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';
import type { WorkflowResources } from './resources';

const w = useWorkflow();
afterEach(() => w.stub.setFaults({}));

/** A fixed threshold (the topic reference's trigger) well inside the 32k test window. */
const trigger = (tokens: number): PolicyInput => ({ trigger: { kind: 'tokens', tokens } });

/** About `tokens` tokens of user text. */
const bigMessage = (id: string, tokens: number) => ({
  id,
  role: 'user' as const,
  parts: [{ type: 'text' as const, text: 'alpha beta gamma delta '.repeat(Math.ceil(tokens / 4)) }],
});

/**
 * The workflow's resources with follow-ups on: `started` (the queue's part once the completion
 * committed: the follow-up's event and job) is recorded, and runs `onStarted` first.
 */
function withFollowUps(
  base: WorkflowResources,
  onStarted?: (requested: CompactionWithOutbox) => Promise<void>,
) {
  const info: Array<Record<string, unknown>> = [];
  const started: CompactionWithOutbox[] = [];
  const resources: WorkflowResources = {
    ...base,
    log: { info: (fields) => info.push(fields), warn: () => undefined },
    followUps: {
      jobName: 'compact',
      async started(_session, requested) {
        await onStarted?.(requested);
        started.push(requested);
      },
    },
  };
  return { resources, info, started };
}

/** Runs a manual compaction of `session`; `whileRunning` appends once the LLM was called. */
async function compactWhile(
  session: SessionRow,
  whileRunning?: () => Promise<void>,
  onStarted?: (requested: CompactionWithOutbox) => Promise<void>,
) {
  const { compaction } = await requestCompaction(w.resources.db, session, {
    reason: 'manual',
    keepRecentTokens: 500,
  });
  const { resources, info, started } = withFollowUps(w.resources, onStarted);
  w.stub.setFaults({ latencyMs: 300 });
  const seen = w.stub.requests.length;
  const running = runCompaction(resources, compaction.id, { lastAttempt: true });
  await w.stub.waitForRequests(seen + 1);
  await whileRunning?.();
  const result = await running;
  if (result.status !== 'completed') throw new Error(`the compaction ended ${result.status}`);
  return { resources, completed: result.compaction, followUp: result.followUp ?? null, info, started };
}

/** The transaction that last wrote each row (`xmin`), by table and key. */
async function writtenBy(table: 'compactions' | 'messages', id: string): Promise<string> {
  const { rows } = await w.resources.db.$client.query<{ xmin: string }>(
    `select xmin::text from ${table} where id = $1`,
    [id],
  );
  return rows[0]!.xmin;
}

async function outboxOf(jobId: string) {
  const { rows } = await w.resources.db.$client.query<{ xmin: string; dispatched: boolean }>(
    'select xmin::text, dispatched_at is not null as dispatched from outbox where job_id = $1',
    [jobId],
  );
  return rows;
}

describe('a compaction outrun by appends', () => {
  it('is followed by another at once, requested the way the API requests one', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(5_000) });
    const { completed, followUp, info, started } = await compactWhile(session, () =>
      w.append(session, [bigMessage('late', 6_000)]),
    );

    expect(completed.tokensAfter).toBeGreaterThan(5_000);
    expect(followUp).toMatchObject({ reason: 'auto', status: 'pending' });
    expect(await findActiveCompaction(w.resources.db, session.pk)).toMatchObject({ id: followUp!.id });
    // Handed to the queue once, with the outbox entry of its job.
    expect(started.map((s) => [s.compaction.id, s.outbox.jobName, s.outbox.jobId])).toEqual([
      [followUp!.id, 'compact', followUp!.id],
    ]);
    const requested = info.find((fields) => fields.followUpId === followUp!.id);
    // Its own result was below the threshold: the appended message made the difference.
    expect(requested).toMatchObject({ tokensAfter: completed.tokensAfter });
    expect(completed.tokensAfter! - (requested!.appendedTokens as number)).toBeLessThan(5_000);
  });

  it('commits the follow-up with the completion: no committed state shows it completed, nothing active, over its trigger', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(5_000) });
    // Read from another connection right after the commit, before the follow-up is enqueued:
    // what any poller could see first.
    const seenAtCommit: Array<{ latest: string | null; active: string | null; status: string | null }> = [];
    const { completed, followUp } = await compactWhile(
      session,
      () => w.append(session, [bigMessage('late', 6_000)]),
      async () => {
        const latest = await findLatestCompletedCompaction(w.resources.db, session.pk);
        const active = await findActiveCompaction(w.resources.db, session.pk);
        seenAtCommit.push({
          latest: latest?.id ?? null,
          active: active?.id ?? null,
          status: active?.status ?? null,
        });
      },
    );
    expect(completed.tokensAfter).toBeGreaterThan(5_000);
    expect(seenAtCommit).toEqual([{ latest: completed.id, active: followUp!.id, status: 'pending' }]);
    // One transaction wrote the completion's summary message, the follow-up's row and its
    // outbox entry: there was no instant between them.
    const completion = await writtenBy('messages', completed.summaryMessageIds[0]!);
    expect(await writtenBy('compactions', followUp!.id)).toBe(completion);
    expect(await outboxOf(followUp!.id)).toEqual([{ xmin: completion, dispatched: false }]);
  });

  it('is not followed when nothing arrived while it ran, even if it left the session over its trigger', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(100) });
    const { completed, followUp, started } = await compactWhile(session);
    expect(completed.tokensAfter).toBeGreaterThan(100);
    expect(followUp).toBeNull();
    expect(started).toEqual([]);
    expect(await findActiveCompaction(w.resources.db, session.pk)).toBeNull();
  });

  it('is not followed when it was itself ineffective and little arrived (the loop guard)', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(100) });
    const { followUp } = await compactWhile(session, () =>
      w.append(session, [{ id: 'ok', role: 'user', parts: [{ type: 'text', text: 'ok' }] }]),
    );
    expect(followUp).toBeNull();
    expect(await findActiveCompaction(w.resources.db, session.pk)).toBeNull();
  });
});

describe('the follow-up across crashes and takeovers', () => {
  it('is requested once: a crash between the commit and the enqueue leaves it to the reconciler, and the retry requests none', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(5_000) });
    const { completed, followUp, resources } = await compactWhile(
      session,
      () => w.append(session, [bigMessage('late', 6_000)]),
      // The worker loses Redis (or dies) once the completion committed.
      () => Promise.reject(new Error('enqueue lost')),
    );
    expect(followUp).toMatchObject({ status: 'pending' });
    expect(await outboxOf(followUp!.id)).toEqual([{ xmin: expect.any(String), dispatched: false }]);

    // The queue runs the job again (its lock expired): the row is completed, nothing is written.
    expect(await runCompaction(resources, completed.id, { lastAttempt: false })).toEqual({
      status: 'inactive',
      compaction: null,
    });
    const rows = await listCompactions(w.resources.db, session.pk, { limit: 10 });
    expect(rows.map((r) => [r.id, r.status]).sort()).toEqual(
      [
        [completed.id, 'completed'],
        [followUp!.id, 'pending'],
      ].sort(),
    );
    expect(await outboxOf(followUp!.id)).toHaveLength(1);
  });

  it('a stale attempt completes nothing and requests nothing, however far appends outran it', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(5_000) });
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 500,
    });
    const { resources, started } = withFollowUps(w.resources);
    let takenOver: number | null = null;
    // Right before the completing transaction takes its connection, another worker claims the
    // compaction (a new fence) and a large message arrives.
    const pool = resources.db.$client;
    const db = new Proxy(resources.db, {
      get(target, property, receiver) {
        if (property !== '$client') return Reflect.get(target, property, receiver) as unknown;
        return {
          connect: async () => {
            if (takenOver === null) {
              takenOver = (await claimCompaction(w.resources.db, compaction.id, new Date()))!.compaction
                .fence;
              await w.append(session, [bigMessage('late', 6_000)]);
            }
            return pool.connect();
          },
        };
      },
    });
    const result = await runCompaction({ ...resources, db }, compaction.id, { lastAttempt: true });

    expect(result).toEqual({ status: 'stale', compaction: null });
    expect(await findCompaction(w.resources.db, compaction.id)).toMatchObject({
      status: 'running',
      fence: takenOver,
      summaryMessageIds: [],
    });
    // It got as far as the completion: its finalize step was entered, and failed there.
    const steps = await listCompactionSteps(w.resources.db, compaction.id);
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['prune', 'completed'],
      ['summarize', 'completed'],
      ['finalize', 'failed'],
    ]);
    expect(started).toEqual([]);
    const rows = await listCompactions(w.resources.db, session.pk, { limit: 10 });
    expect(rows.map((r) => r.id)).toEqual([compaction.id]);
    const { rows: entries } = await w.resources.db.$client.query(
      'select o.job_id from outbox o join compactions c on c.id = o.job_id where c.session_pk = $1',
      [session.pk],
    );
    expect(entries).toEqual([]);
  });
});
