import { describe, expect, it, vi } from 'vitest';
import { listCompactionSteps, listCompactions } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { followUpsOf, startCompaction, startPrune } from '../jobs/dispatch';
import { useQueueHarness } from '../test-support/queue';

const q = useQueueHarness();

describe('compact jobs on BullMQ workers', () => {
  it('runs a requested compaction to completion and announces every step', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }));
    const events = await q.record(session.pk);
    q.startWorkers();
    const { compaction, created } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    expect(created).toBe(true);

    const done = await q.waitForStatus(compaction.id, ['completed']);
    expect(done.attempts).toBe(1);
    await vi.waitFor(() => expect(events.map((e) => e.type)).toContain('session.compacted'));
    const types = events.map((e) => e.type);
    expect(types).toEqual([
      'compaction.requested',
      'compaction.started',
      'compaction.step',
      'compaction.step',
      'compaction.step',
      'compaction.completed',
      'session.compacted',
    ]);
    expect(events.map((e) => e.data.step).filter(Boolean)).toEqual(['prune', 'summarize', 'finalize']);
    expect(events.find((e) => e.type === 'compaction.completed')?.data).toMatchObject({
      tokensBefore: done.tokensBefore,
      tokensAfter: done.tokensAfter,
    });
    expect(events.every((e) => e.compactionId === compaction.id && e.sessionId === session.id)).toBe(true);
    const job = await q.queues.queue('compact').getJob(compaction.id);
    // BullMQ marks the job completed just after the processor returned (the row is written first).
    await expect.poll(() => job?.getState(), { timeout: 5_000 }).toBe('completed');
  });

  it('retries transient LLM failures with backoff, then completes on the same row', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }));
    q.stub.setFaults({ status: 500, times: 2 });
    q.startWorkers();
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    const done = await q.waitForStatus(compaction.id, ['completed', 'failed']);
    q.stub.setFaults({});
    expect(done).toMatchObject({ status: 'completed', attempts: 3 });
    expect(done.details).toMatchObject({ writtenBy: 'llm' });
    const steps = await listCompactionSteps(q.resources.db, compaction.id);
    expect(steps.filter((s) => s.step === 'summarize').map((s) => s.status)).toEqual([
      'failed',
      'failed',
      'completed',
    ]);
  });

  it("waits at least the provider's Retry-After before the next try", async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }));
    q.stub.setFaults({ status: 429, retryAfterSeconds: 1.2, times: 1 });
    q.startWorkers();
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    await q.waitForStatus(compaction.id, ['completed']);
    q.stub.setFaults({});
    const steps = (await listCompactionSteps(q.resources.db, compaction.id)).filter(
      (s) => s.step === 'summarize',
    );
    expect(steps).toHaveLength(2);
    // Backoff base is 20 ms here: only the Retry-After explains a gap of over a second.
    expect(steps[1]!.startedAt.getTime() - steps[0]!.finishedAt!.getTime()).toBeGreaterThanOrEqual(1_150);
  });

  it('on the last try falls back to truncation and records why (never an endless loop)', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }));
    const events = await q.record(session.pk);
    q.stub.setFaults({ status: 503 });
    q.startWorkers();
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    const done = await q.waitForStatus(compaction.id, ['completed', 'failed']);
    q.stub.setFaults({});
    expect(done).toMatchObject({ status: 'completed', attempts: 3, fallbackCode: 'llm_retries_exhausted' });
    expect(done.details).toMatchObject({
      writtenBy: 'truncate',
      fallback: { code: 'llm_retries_exhausted' },
    });
    // Said at top level, on the session's event stream too.
    await vi.waitFor(() => expect(events.map((e) => e.type)).toContain('session.compacted'));
    for (const type of ['compaction.completed', 'session.compacted'])
      expect(events.find((e) => e.type === type)?.data).toMatchObject({
        fallback: { code: 'llm_retries_exhausted' },
      });
    const job = await q.queues.queue('compact').getJob(compaction.id);
    // BullMQ marks the job completed just after the processor returned (the row is written first).
    await expect.poll(() => job?.getState(), { timeout: 5_000 }).toBe('completed');
  });

  it('fails fast on a non-retryable answer (no retries spent)', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 4 }), {
      policy: { fallback: 'fail' },
    });
    q.stub.setFaults({ status: 401 });
    q.startWorkers();
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' });
    const done = await q.waitForStatus(compaction.id, ['completed', 'failed']);
    q.stub.setFaults({});
    expect(done).toMatchObject({ status: 'failed', attempts: 1, errorCode: 'llm_fatal' });
  });

  it('follows a compaction outrun by appends with another, which the workers run too', async () => {
    // A fixed threshold of 5,000 tokens; 6,000 arrive while the first compaction runs.
    const session = await q.seedSession(generateCodingSession({ turns: 3 }), {
      policy: { trigger: { kind: 'tokens', tokens: 5_000 } },
    });
    q.startWorkers({}, { followUps: followUpsOf(q.dispatch) });
    q.stub.setFaults({ latencyMs: 300 });
    const seen = q.stub.requests.length;
    const { compaction } = await startCompaction(q.dispatch, session, {
      reason: 'manual',
      keepRecentTokens: 500,
    });
    await q.stub.waitForRequests(seen + 1);
    const late = 'alpha beta gamma delta '.repeat(1_500);
    await q.append(session, [{ id: 'late', role: 'user', parts: [{ type: 'text', text: late }] }]);
    const first = await q.waitForStatus(compaction.id, ['completed']);
    q.stub.setFaults({});

    // Newest first.
    const rows = () => listCompactions(q.resources.db, session.pk, { limit: 10 });
    await vi.waitFor(async () => expect(await rows()).toHaveLength(2), { timeout: 10_000 });
    const [followUp] = await rows();
    expect(followUp).toMatchObject({ reason: 'auto' });
    const done = await q.waitForStatus(followUp!.id, ['completed', 'skipped', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.coversThroughSeq).toBeGreaterThan(first.coversThroughSeq!);
  });
});

describe('the step gate', () => {
  it('holds no place while a compaction waits on the LLM: one place, four LLM calls in flight together', async () => {
    const sessions = await Promise.all(
      [0, 1, 2, 3].map(() => q.seedSession(generateCodingSession({ turns: 4 }))),
    );
    // Every summary call waits until four are in flight at once. Were the one place held during
    // the call, the second could never start: the compactions would fail on the barrier's timeout.
    let inFlight = 0;
    let most = 0;
    let open: () => void = () => undefined;
    const allIn = new Promise<void>((resolve) => (open = resolve));
    const barrier = async <T>(call: () => Promise<T>): Promise<T> => {
      most = Math.max(most, ++inFlight);
      if (inFlight === 4) open();
      try {
        await Promise.race([
          allIn,
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error('barrier: calls never overlapped')), 10_000),
          ),
        ]);
        return await call();
      } finally {
        inFlight--;
      }
    };
    const llm = q.live.llm;
    q.startWorkers(
      { concurrency: 4, stepConcurrency: 1, policy: { ...q.queues.policy, attempts: 1 } },
      {
        llm: {
          ...llm,
          summarizeMessages: (input) => barrier(() => llm.summarizeMessages(input)),
          summarizeSplitTurn: (input) => barrier(() => llm.summarizeSplitTurn(input)),
        },
      },
    );
    const ids = [];
    for (const session of sessions)
      ids.push((await startCompaction(q.dispatch, session, { reason: 'manual' })).compaction.id);
    for (const id of ids)
      expect(await q.waitForStatus(id, ['completed', 'failed'])).toMatchObject({
        status: 'completed',
        details: { writtenBy: 'llm' },
      });
    expect(most).toBe(4);
  });
});

describe('prune jobs', () => {
  it('prunes old tool outputs of a session and announces it', async () => {
    const session = await q.seedSession(generateCodingSession({ turns: 8 }), {
      policy: { pruning: { protectTokens: 1_000, minimumTokens: 1_000 } },
    });
    const events = await q.record(session.pk);
    q.startWorkers();
    const { jobId } = await startPrune(q.dispatch, session, 'manual');
    await vi.waitFor(() => expect(events.map((e) => e.type)).toContain('prune.completed'), {
      timeout: 60_000,
    });
    const event = events.find((e) => e.type === 'prune.completed')!;
    expect(event.data).toMatchObject({ jobId });
    expect(event.data.parts).toBeGreaterThan(0);
    const context = await q.context(session.pk);
    const cleared = context.messages
      .flatMap((m) => m.parts)
      .filter(
        (p) => p.type === 'tool' && p.output === `[Old tool result content cleared — recall ${p.callId}]`,
      );
    expect(cleared.length).toBe(event.data.parts);
  });
});
