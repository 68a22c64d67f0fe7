import { afterEach, describe, expect, it } from 'vitest';
import type { Part } from '@compactor/core';
import { ConflictError, countPart, findCompaction, patchMessage, type MessageInput } from '@compactor/db';
import { getTokenizer } from '@compactor/tokenizer';
import { useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();
afterEach(() => w.stub.setFaults({}));

const RESULT = 'MIGRATION CHECK PASSED: 42 tables, 0 pending';
const counter = { count: async (text: string) => getTokenizer('o200k_base').countSync(text) };

/**
 * An earlier turn whose call is still running (its result has not arrived), then a newer turn
 * long enough that a compaction cuts after the earlier one.
 */
function sessionWithRunningCall(): MessageInput[] {
  const filler = 'The invoice exporter now batches rows by tenant and flushes every 500 records.\n';
  return [
    {
      id: 'ask',
      role: 'user',
      parts: [{ type: 'text', text: 'Check the migrations, then fix the exporter.' }],
    },
    {
      id: 'check',
      role: 'assistant',
      parts: [
        {
          type: 'tool',
          callId: 'slow',
          tool: 'bash',
          status: 'running',
          input: { command: 'migrate --check' },
        },
      ],
    },
    { id: 'next', role: 'user', parts: [{ type: 'text', text: 'While that runs, rework the exporter.' }] },
    ...Array.from({ length: 6 }, (_, i) => ({
      id: `work-${i}`,
      role: 'assistant' as const,
      parts: [{ type: 'text' as const, text: filler.repeat(120) }],
    })),
  ];
}

async function finishedCall(): Promise<Part> {
  return countPart(
    {
      type: 'tool',
      callId: 'slow',
      tool: 'bash',
      status: 'completed',
      input: { command: 'migrate --check' },
      output: RESULT,
    },
    counter,
  );
}

describe('a tool result that lands while a compaction runs is never lost', () => {
  it('finalize summarises again when a covered call finished meanwhile; the new summary saw the result', async () => {
    const session = await w.seedSession(sessionWithRunningCall(), { contextWindow: 16_000 });
    w.stub.setFaults({ latencyMs: 400 });
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 4000,
    });
    const firstRequest = new Promise<void>((resolve) => w.stub.events.once('request', () => resolve()));
    const running = runCompaction(w.resources, compaction.id, { lastAttempt: true });
    await firstRequest;
    // The result arrives while the summarizer writes: the PATCH is accepted.
    const patched = await patchMessage(w.resources.db, session.pk, 'check', {
      parts: [await finishedCall()],
    });
    expect(patched.parts[0]).toMatchObject({ status: 'completed', output: RESULT });

    const result = await running;
    expect(result.status).toBe('completed');
    const boundary = result.compaction!.boundarySeq!;
    const checkSeq = 2;
    expect(boundary).toBeGreaterThan(checkSeq);
    // Two summaries were asked for; the one finalized read the result.
    const summaries = w.stub.requests.filter((r) =>
      r.messages.some((m) => m.text.includes('<conversation>')),
    );
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    expect(
      summaries
        .at(-1)!
        .messages.map((m) => m.text)
        .join('\n'),
    ).toContain(RESULT);
    expect(summaries[0]!.messages.map((m) => m.text).join('\n')).not.toContain(RESULT);
    expect((await findCompaction(w.resources.db, compaction.id))?.changedSeq).toBeNull();
  });

  it('a result for a call behind the boundary is refused (409), not silently dropped', async () => {
    const session = await w.seedSession(sessionWithRunningCall(), { contextWindow: 16_000 });
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 4000,
    });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.compaction!.boundarySeq).toBeGreaterThan(2);
    const refused = patchMessage(w.resources.db, session.pk, 'check', { parts: [await finishedCall()] });
    await expect(refused).rejects.toBeInstanceOf(ConflictError);
    await expect(refused).rejects.toMatchObject({ details: { reason: 'message_compacted' } });
  });

  it('a change to a kept message does not make the compaction summarise again', async () => {
    const messages = sessionWithRunningCall();
    const session = await w.seedSession(messages, { contextWindow: 16_000 });
    w.stub.setFaults({ latencyMs: 300 });
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 4000,
    });
    const before = w.stub.requests.length;
    const firstRequest = new Promise<void>((resolve) => w.stub.events.once('request', () => resolve()));
    const running = runCompaction(w.resources, compaction.id, { lastAttempt: true });
    await firstRequest;
    // The newest message gets a new part: it is kept, so the summary stands.
    const note = await countPart({ type: 'text', text: 'One more note.' }, counter);
    await patchMessage(w.resources.db, session.pk, 'work-5', { parts: [note] });
    const result = await running;
    expect(result.status).toBe('completed');
    expect(w.stub.requests.length - before).toBe(1);
  });
});
