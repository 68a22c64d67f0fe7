/**
 * Prepared summaries (policy `prepare`) in the workflow: the prepare job writes a draft without
 * changing the context, and the auto compaction finalizes it without calling the summarizer
 * while it still covers a prefix of the view; otherwise it summarises as without one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PolicyInput } from '@compactor/core';
import {
  countPart,
  findCompaction,
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

/** A session with a ready draft, then two more turns appended after it. */
async function sessionWithDraft(): Promise<{ session: SessionRow; draftId: string; cutSeq: number }> {
  const session = await w.seedSession(turns(1, 8), { policy, contextWindow: 16_000 });
  const draftId = `prp_${session.pk}`;
  await requestPreparedSummary(w.resources.db, {
    sessionPk: session.pk,
    id: draftId,
    baseCompactionId: null,
    jobName: 'prepare',
  });
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

describe('the prepare job', () => {
  it('gives up, without calling the summarizer, while a compaction is active', async () => {
    const session = await w.seedSession(turns(1, 8), { policy, contextWindow: 16_000 });
    await requestPreparedSummary(w.resources.db, {
      sessionPk: session.pk,
      id: 'prp_busy',
      baseCompactionId: null,
      jobName: 'prepare',
    });
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
    await requestPreparedSummary(w.resources.db, {
      sessionPk: session.pk,
      id: 'prp_fail',
      baseCompactionId: null,
      jobName: 'prepare',
    });
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
