/**
 * Prepared summaries (policy `prepare`) in the workflow: the prepare job writes a draft without
 * changing the context, and the auto compaction finalizes it without calling the summarizer
 * while it still covers a prefix of the view; otherwise it summarises as without one.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PolicyInput } from '@compactor/core';
import {
  countPart,
  findCompaction,
  beginPreparedSummary,
  endPreparedSummary,
  findPreparedSummary,
  patchMessage,
  requestPreparedSummary,
  updateSession,
  type MessageInput,
  type SessionRow,
} from '@compactor/db';
import { getTokenizer } from '@compactor/tokenizer';
import { prepareSummary } from './prepare-summary';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';
import { useWorkflow } from './test-support/workflow';

const w = useWorkflow();
afterEach(() => w.stub.setFaults({}));

/** A 16,000-token window; auto compactions keep 0.05 × 16,000 = 800 tokens. */
const policy: PolicyInput = { keepRecent: { autoRatio: 0.05 }, prune: false, prepare: { atRatio: 0.7 } };
const turns = (from: number, count: number): MessageInput[] =>
  Array.from({ length: count }, (_, i) => [
    {
      id: `u${from + i}`,
      role: 'user' as const,
      parts: [
        { type: 'text' as const, text: `Step ${from + i}: ${'rework the exporter batching. '.repeat(30)}` },
      ],
    },
    {
      id: `a${from + i}`,
      role: 'assistant' as const,
      parts: [
        { type: 'text' as const, text: `Done ${from + i}. ${'Rows now flush per tenant. '.repeat(30)}` },
      ],
    },
  ]).flat();

/** Requests a draft of the session on its first boundary, as the trigger would `headroomTokens` below it. */
async function requestDraft(session: SessionRow, id: string, headroomTokens = 0): Promise<void> {
  await requestPreparedSummary(w.resources.db, {
    sessionPk: session.pk,
    id,
    baseCompactionId: null,
    headroomTokens,
    jobName: 'prepare',
  });
}

/** A session with a ready draft, then two more turns appended after it. */
async function sessionWithDraft(): Promise<{ session: SessionRow; draftId: string; cutSeq: number }> {
  const session = await w.seedSession(turns(1, 8), { policy, contextWindow: 16_000 });
  const draftId = `prp_${session.pk}`;
  await requestDraft(session, draftId);
  const viewBefore = await w.context(session.pk);
  const prepared = await prepareSummary(w.resources, session.pk, draftId);
  expect(prepared).toMatchObject({ status: 'ready' });
  // The context is untouched: no boundary, no summary message.
  expect(await w.context(session.pk)).toEqual(viewBefore);
  await w.append(session, turns(9, 2));
  const cutSeq = (prepared as { cutSeq: number }).cutSeq;
  return { session, draftId, cutSeq };
}

async function autoCompaction(session: SessionRow) {
  const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'auto' });
  const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
  expect(result.status).toBe('completed');
  return (await findCompaction(w.resources.db, compaction.id))!;
}

describe('an auto compaction with a prepared summary', () => {
  it('finalizes the draft without the summarizer: its cut, its summary, its spend', async () => {
    const { session, draftId, cutSeq } = await sessionWithDraft();
    const draft = (await findPreparedSummary(w.resources.db, session.pk))!;
    const calls = w.stub.requests.length;
    const done = await autoCompaction(session);
    expect(w.stub.requests.length).toBe(calls);
    expect(done.boundarySeq).toBe(cutSeq);
    expect(done.details).toMatchObject({
      writtenBy: 'llm',
      prepared: { draftId, preparedAt: draft.preparedAt!.toISOString() },
    });
    expect(done).toMatchObject({
      model: draft.model,
      usageInput: draft.usageInput,
      usageOutput: draft.usageOutput,
    });
    // Analysts see the draft's spend once: on the compaction that used it, which the draft names.
    const { rows } = await w.resources.db.$client.query(
      `select status, used_by, llm_input_tokens from analytics.prepared_summaries where draft_id = $1`,
      [draftId],
    );
    expect(rows).toEqual([{ status: 'ready', used_by: done.id, llm_input_tokens: draft.usageInput }]);
    // Everything after the cut is kept, the turns appended after the draft included.
    const view = (await w.context(session.pk)).messages.filter((m) => !m.summary);
    expect(view[0]!.seq).toBe(cutSeq);
    expect(view.at(-1)!.id).toBe('a10');
  });

  it('summarises as without one when a message before its cut changed since', async () => {
    const { session } = await sessionWithDraft();
    const note = await countPart({ type: 'text', text: 'A late correction.' }, getTokenizer('o200k_base'));
    await patchMessage(w.resources.db, session.pk, 'a1', { parts: [note] });
    const calls = w.stub.requests.length;
    const done = await autoCompaction(session);
    expect(w.stub.requests.length).toBeGreaterThan(calls);
    expect(done.details).not.toHaveProperty('prepared');
  });

  it('summarises as without one once another compaction moved the boundary', async () => {
    const { session } = await sessionWithDraft();
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 2_000,
    });
    expect((await runCompaction(w.resources, compaction.id, { lastAttempt: true })).status).toBe('completed');
    await w.append(session, turns(11, 6));
    const calls = w.stub.requests.length;
    const done = await autoCompaction(session);
    expect(w.stub.requests.length).toBeGreaterThan(calls);
    expect(done.details).not.toHaveProperty('prepared');
  });

  it('summarises as without one when the policy changed since', async () => {
    const { session } = await sessionWithDraft();
    const changed = await updateSession(w.resources.db, session.pk, {
      policy: { ...policy, keepRecent: { autoRatio: 0.06 } },
    });
    const calls = w.stub.requests.length;
    const done = await autoCompaction(changed!);
    expect(w.stub.requests.length).toBeGreaterThan(calls);
    expect(done.details).not.toHaveProperty('prepared');
  });

  it('a manual compaction does not use it', async () => {
    const { session } = await sessionWithDraft();
    const calls = w.stub.requests.length;
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    expect(w.stub.requests.length).toBeGreaterThan(calls);
    expect(result.compaction!.details).not.toHaveProperty('prepared');
  });
});

describe('an auto compaction while the draft is being written', () => {
  /** A session whose draft request's job has begun reading the view (its summary under way). */
  async function sessionWithDraftBegun(): Promise<{ session: SessionRow; draftId: string }> {
    const session = await w.seedSession(turns(1, 10), { policy, contextWindow: 16_000 });
    const draftId = `prp_begun_${session.pk}`;
    await requestDraft(session, draftId);
    return { session, draftId };
  }
  /** Waits outside the worker's gate, as the queue's compaction processor does, and counts it. */
  const outside = () => {
    const waits: number[] = [];
    const waitOutside = async <T>(wait: () => Promise<T>): Promise<T> => {
      waits.push(Date.now());
      return wait();
    };
    return { waits, resources: { ...w.resources, waitOutside } };
  };

  it('waits for it and finalizes it, with no summarizer call of its own', async () => {
    const { session, draftId } = await sessionWithDraftBegun();
    // The job's summarizer call takes 800 ms; the trigger's compaction starts meanwhile.
    w.stub.setFaults({ latencyMs: 800 });
    const calls = w.stub.requests.length;
    const drafting = prepareSummary(w.resources, session.pk, draftId);
    await vi.waitFor(async () => {
      expect((await findPreparedSummary(w.resources.db, session.pk))?.coversThroughSeq).not.toBeNull();
    });
    const { waits, resources } = outside();
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'auto' });
    const result = await runCompaction(resources, compaction.id, { lastAttempt: true });
    const drafted = await drafting;
    expect(drafted.status).toBe('ready');
    expect(result.status).toBe('completed');
    expect(waits).toHaveLength(1);
    expect(w.stub.requests.length - calls, 'the draft’s call only').toBe(1);
    expect(result.compaction!.details).toMatchObject({ prepared: { draftId } });
    expect(result.compaction!.boundarySeq).toBe((drafted as { cutSeq: number }).cutSeq);
  });

  it('summarises itself when the draft it waited for fails', async () => {
    const { session, draftId } = await sessionWithDraftBegun();
    await beginPreparedSummary(w.resources.db, session.pk, draftId, session.lastSeq);
    const { waits, resources } = outside();
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'auto' });
    const calls = w.stub.requests.length;
    const running = runCompaction(resources, compaction.id, { lastAttempt: true });
    // Once it is waiting for the draft (not before: it would not wait at all), the draft fails.
    await vi.waitFor(() => expect(waits).toHaveLength(1), { timeout: 30_000, interval: 10 });
    await endPreparedSummary(w.resources.db, session.pk, draftId, 'failed', 'llm_unavailable');
    const result = await running;
    expect(result.status).toBe('completed');
    expect(waits).toHaveLength(1);
    expect(w.stub.requests.length).toBeGreaterThan(calls);
    expect(result.compaction!.details).not.toHaveProperty('prepared');
  });

  it('does not wait for a request whose job has not begun, nor for a manual compaction', async () => {
    const queued = await sessionWithDraftBegun();
    const { waits, resources } = outside();
    const auto = await requestCompaction(w.resources.db, queued.session, { reason: 'auto' });
    expect((await runCompaction(resources, auto.compaction.id, { lastAttempt: true })).status).toBe(
      'completed',
    );

    const begun = await sessionWithDraftBegun();
    await beginPreparedSummary(w.resources.db, begun.session.pk, begun.draftId, begun.session.lastSeq);
    const manual = await requestCompaction(w.resources.db, begun.session, { reason: 'manual' });
    expect((await runCompaction(resources, manual.compaction.id, { lastAttempt: true })).status).toBe(
      'completed',
    );
    expect(waits).toHaveLength(0);
  });
});

describe('the prepare job', () => {
  it('plans for the trigger: a draft requested further below it cuts later', async () => {
    /** The cut of a draft of eight turns requested `headroomTokens` below the trigger. */
    const cutWith = async (headroomTokens: number): Promise<number> => {
      const session = await w.seedSession(turns(1, 8), { policy, contextWindow: 16_000 });
      const id = `prp_room_${session.pk}`;
      await requestDraft(session, id, headroomTokens);
      const outcome = await prepareSummary(w.resources, session.pk, id, { headroomTokens });
      expect(outcome.status).toBe('ready');
      return (outcome as { cutSeq: number }).cutSeq;
    };
    // The 800-token budget keeps about two turns; 500 tokens still to grow leave 300 to the
    // draft, about one: what is appended until the trigger fills the rest of the budget.
    const whole = await cutWith(0);
    const planned = await cutWith(500);
    expect(planned).toBeGreaterThan(whole);
  });

  it('gives up, without calling the summarizer, while a compaction is active', async () => {
    const session = await w.seedSession(turns(1, 8), { policy, contextWindow: 16_000 });
    await requestDraft(session, 'prp_busy');
    await requestCompaction(w.resources.db, session, { reason: 'auto' });
    const calls = w.stub.requests.length;
    expect(await prepareSummary(w.resources, session.pk, 'prp_busy')).toEqual({
      status: 'skipped',
      code: 'compaction_active',
    });
    expect(w.stub.requests.length).toBe(calls);
    expect(await findPreparedSummary(w.resources.db, session.pk)).toMatchObject({
      status: 'skipped',
      errorCode: 'compaction_active',
    });
  });

  it('gives the draft up when the summarizer fails, keeping no truncate text', async () => {
    const session = await w.seedSession(turns(1, 8), { policy, contextWindow: 16_000 });
    await requestDraft(session, 'prp_fail');
    w.stub.setFaults({ status: 400 });
    const outcome = await prepareSummary(w.resources, session.pk, 'prp_fail');
    expect(outcome.status).toBe('failed');
    expect(await findPreparedSummary(w.resources.db, session.pk)).toMatchObject({
      status: 'failed',
      outcome: null,
      cutSeq: null,
    });
  });
});
