import { describe, expect, it, vi } from 'vitest';
import {
  applyMediaBudget,
  mediaBudgetOf,
  storedTokens,
  toOpenAIMessages,
  usableTokens,
  usageCalibrationCap,
  validateContext,
  type PolicyInput,
} from '@compactor/core';
import {
  StaleAttemptError,
  claimCompaction,
  completeCompaction,
  contextTokenStats,
  estimateFromStats,
  findCompaction,
  listCompactionSteps,
  sessionModel,
  type ContextTokenStats,
  type SessionRow,
} from '@compactor/db';
import { LlmRetryableError } from '@compactor/llm';
import { generateCodingSession, SESSION_FACTS } from '@compactor/testing/fixtures';
import { textOf, useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';
import { resolveStoredPolicy } from './stored-policy';

const w = useWorkflow();

/**
 * The estimate the session status shows from `stats`: the hybrid one, capped for the session's
 * model, images past the media budget counted as their markers.
 */
function statusEstimate(session: SessionRow, stats: ContextTokenStats): number {
  const policy = resolveStoredPolicy(session.policy as PolicyInput);
  const usable = usableTokens(sessionModel(session), policy);
  const calibrationCap = usageCalibrationCap(usable);
  return estimateFromStats(stats, {
    mode: policy.estimate,
    calibrationCap,
    media: mediaBudgetOf(policy, usable),
  });
}

describe('runCompaction (prune → summarize → finalize)', () => {
  it('compacts a real-looking session: summary first, recent turns verbatim, the goal and files kept', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 4 }));
    const before = await w.context(session.pk);
    // What the session status showed before: the hybrid estimate, calibrated on reported usage.
    const statusBefore = statusEstimate(session, await contextTokenStats(w.resources.db, session.pk));
    const { compaction, created } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    expect(created).toBe(true);

    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

    expect(result.status).toBe('completed');
    const row = result.compaction!;
    expect(row).toMatchObject({ status: 'completed', step: null, attempts: 1, model: 'stub-summarizer' });
    expect(row.tokensBefore).toBe(statusBefore);
    expect(row.tokensAfter).toBeLessThan(row.tokensBefore! / 2);
    expect(row.messagesBefore).toBe(before.messages.length);
    expect(row.summaryMessageIds).toHaveLength(2);
    expect(row.usageInput).toBeGreaterThan(0);

    const after = await w.context(session.pk);
    expect(after.tokens).toBe(row.tokensAfter);
    const [marker, summary, firstKept] = after.messages;
    expect(marker).toMatchObject({ role: 'user', summary: true, compactionId: compaction.id });
    expect(summary).toMatchObject({ role: 'assistant', summary: true, finish: 'stop' });
    expect(textOf(summary)).toContain('JavaScript heap out of memory');
    expect(textOf(summary)).toContain(SESSION_FACTS.files[0]);
    expect(firstKept?.role).toBe('user');
    expect(firstKept?.seq).toBe(row.boundarySeq);
    // The kept tail is verbatim: the newest message is untouched.
    expect(after.messages.at(-1)).toEqual(before.messages.at(-1));
    expect(validateContext(toOpenAIMessages(after))).toEqual([]);

    const steps = await listCompactionSteps(w.resources.db, compaction.id);
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['prune', 'completed'],
      ['summarize', 'completed'],
      ['finalize', 'completed'],
    ]);
    // Each record closed with its step's result (finalize's inside its transaction), no text.
    expect(steps[0]!.detail).toMatchObject({ parts: row.prunedParts, tokens: row.prunedTokens });
    expect(steps[1]!.detail).toMatchObject({ writtenBy: 'llm', boundarySeq: row.boundarySeq });
    expect(steps[1]!.detail).not.toHaveProperty('summaryText');
    expect(steps[2]!.detail).toEqual({
      boundarySeq: row.boundarySeq,
      summaryMessages: 2,
      tokensAfter: row.tokensAfter,
      messagesAfter: row.messagesAfter,
    });
    expect(steps.every((s) => s.finishedAt !== null && s.finishedAt >= s.startedAt)).toBe(true);
    // The draft served its purpose (pay the LLM once): the summary message holds the text now.
    expect(row.summaryDraft).toBeNull();
  });

  it('records a prune with nothing to do as taking the time it spent sizing the context', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }), { policy: { prune: false } });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    // Every reading of the clock is 7 ms after the previous one.
    let now = Date.parse('2026-03-01T00:00:00Z');
    const clock = () => new Date((now += 7));
    const result = await runCompaction({ ...w.resources, clock }, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');

    const [prune, summarize] = await listCompactionSteps(w.resources.db, compaction.id);
    expect(prune).toMatchObject({ step: 'prune', status: 'completed', detail: { skipped: 'policy' } });
    const tookMs = prune!.finishedAt!.getTime() - prune!.startedAt.getTime();
    expect(tookMs).toBeGreaterThan(0);
    expect(tookMs % 7).toBe(0);
    // The summarize step begins where the prune ended.
    expect(summarize!.startedAt).toEqual(prune!.finishedAt);
  });

  it.each([true, false])(
    'records the size before as the status measures it, pinning system messages or not (%s)',
    async (pinSystemMessages) => {
      // The claim measures the view as the default policy pins; a policy without pinning reads
      // its own. Pinning decides only for a system message before a boundary: compact once first.
      const system = {
        role: 'system' as const,
        parts: [{ type: 'text' as const, text: 'You are a coding agent. '.repeat(40) }],
      };
      const session = await w.seedSession([system, ...generateCodingSession({ turns: 4 })], {
        policy: { pinSystemMessages },
      });
      const first = await requestCompaction(w.resources.db, session, { reason: 'manual' });
      expect((await runCompaction(w.resources, first.compaction.id, { lastAttempt: true })).status).toBe(
        'completed',
      );
      await w.append(session, generateCodingSession({ turns: 3 }));
      const measured = (pin: boolean) =>
        contextTokenStats(w.resources.db, session.pk, { pinSystemMessages: pin }).then((stats) => ({
          tokens: statusEstimate(session, stats),
          messages: stats.contextMessages,
        }));
      const expected = await measured(pinSystemMessages);
      expect(await measured(!pinSystemMessages)).not.toEqual(expected);
      const { compaction } = await requestCompaction(w.resources.db, session, {
        reason: 'manual',
        keepRecentTokens: 500,
      });

      const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

      expect(result.compaction).toMatchObject({
        status: 'completed',
        tokensBefore: expected.tokens,
        messagesBefore: expected.messages,
      });
    },
  );

  it('measures the view as served before and after: images past the media budget as their markers', async () => {
    // Links never fetched: each counts as the largest image of any family, 4,784 tokens.
    const shots = Array.from({ length: 30 }, (_, n) => ({
      role: 'user' as const,
      parts: [
        { type: 'text' as const, text: `Screenshot ${n} of the settings page.` },
        {
          type: 'file' as const,
          mime: 'image/png',
          filename: `shot-${n}.png`,
          url: `https://example.test/${n}.png`,
        },
      ],
    }));
    // The newest two images are kept: the kept messages past the boundary hold more.
    const session = await w.seedSession([...generateCodingSession({ turns: 4 }), ...shots], {
      policy: { media: { keepImages: 2 } },
    });
    const policy = resolveStoredPolicy(session.policy as PolicyInput);
    const budget = mediaBudgetOf(policy, usableTokens(sessionModel(session), policy));
    const before = await w.context(session.pk);
    const servedBefore = applyMediaBudget(before.messages, budget);
    expect(servedBefore.elided).toBeGreaterThan(0);
    const stats = await contextTokenStats(w.resources.db, session.pk);
    // Recent turns to keep for about eight screenshots: their images past the budget count as markers.
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 40_000,
    });

    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

    expect(result.compaction).toMatchObject({
      status: 'completed',
      tokensBefore: statusEstimate(session, stats),
    });
    expect(result.compaction!.tokensBefore).toBeLessThan(stats.storedTokens);
    const after = await w.context(session.pk);
    // The status after counts the kept images past the budget as markers too (the row's
    // tokensAfter is the stored sum: completeCompaction measures it in SQL).
    const served = applyMediaBudget(after.messages, budget);
    expect(served.elided).toBeGreaterThan(0);
    expect(statusEstimate(session, await contextTokenStats(w.resources.db, session.pk))).toBe(
      storedTokens(served.messages),
    );
  });

  it('never loses messages appended while it runs: they land after the boundary', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'auto' });
    w.stub.setFaults({ latencyMs: 400 });
    const seen = w.stub.requests.length;
    const running = runCompaction(w.resources, compaction.id, { lastAttempt: true });
    await w.stub.waitForRequests(seen + 1);
    await w.append(session, [
      { id: 'late', role: 'user', parts: [{ type: 'text', text: 'One more thing while you work.' }] },
    ]);
    const result = await running;
    w.stub.setFaults({});

    expect(result.status).toBe('completed');
    const row = result.compaction!;
    const after = await w.context(session.pk);
    const late = after.messages.find((m) => m.id === 'late');
    expect(late).toBeDefined();
    expect(late!.seq).toBeGreaterThan(row.coversThroughSeq!);
    expect(after.messages.at(-1)?.id).toBe('late');
    expect(after.messages[0]?.summary).toBe(true);
  });

  it('merges the previous summary on the next compaction instead of re-summarising it', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }));
    const first = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    await runCompaction(w.resources, first.compaction.id, { lastAttempt: true });
    await w.append(
      session,
      generateCodingSession({ turns: 6, seed: 99 })
        .slice(10)
        .map((m) => ({ ...m, id: `second-${m.id}` })),
    );

    const seen = w.stub.requests.length;
    const second = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const result = await runCompaction(w.resources, second.compaction.id, { lastAttempt: true });

    expect(result.status).toBe('completed');
    const prompts = w.stub.requests.slice(seen).map((r) => r.messages.map((m) => m.text).join('\n'));
    expect(
      prompts.some((p) => p.includes('<previous-summary>') && p.includes('JavaScript heap out of memory')),
    ).toBe(true);
    const after = await w.context(session.pk);
    expect(textOf(after.messages[1])).toContain('JavaScript heap out of memory');
    expect(after.messages.filter((m) => m.summary)).toHaveLength(2);
  });

  it('falls back to truncation when the summarizer keeps failing on the last attempt', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    w.stub.setFaults({ status: 500 });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    w.stub.setFaults({});

    expect(result.status).toBe('completed');
    expect(result.compaction).toMatchObject({
      strategy: 'summarize',
      model: null,
      usageInput: null,
      fallbackCode: 'llm_retries_exhausted',
      fallbackMessage: expect.any(String),
    });
    expect(result.compaction!.details).toMatchObject({
      writtenBy: 'truncate',
      fallback: { code: 'llm_retries_exhausted' },
    });
    const after = await w.context(session.pk);
    expect(textOf(after.messages[1])).toMatch(/\[Compacted \d+ messages: /);
    expect(textOf(after.messages[1])).toContain(SESSION_FACTS.files[0]);
  });

  it('fails with the error code when the policy does not allow the fallback, changing nothing', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }), {
      policy: { fallback: 'fail' },
    });
    const before = await w.context(session.pk);
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    w.stub.setFaults({ status: 401 });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    w.stub.setFaults({});

    expect(result.status).toBe('failed');
    expect(result.compaction).toMatchObject({ status: 'failed', errorCode: 'llm_fatal', step: null });
    const after = await w.context(session.pk);
    expect(after.messages.map((m) => m.id)).toEqual(before.messages.map((m) => m.id));
    expect(after.compactionId).toBeNull();
  });

  it('rethrows a transient failure before the last attempt; the next attempt completes', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    w.stub.setFaults({ status: 503, times: 1 });

    await expect(runCompaction(w.resources, compaction.id, { lastAttempt: false })).rejects.toBeInstanceOf(
      LlmRetryableError,
    );
    expect(await findCompaction(w.resources.db, compaction.id)).toMatchObject({
      status: 'running',
      attempts: 1,
      step: 'summarize',
    });

    const retried = await runCompaction(w.resources, compaction.id, { lastAttempt: false });
    w.stub.setFaults({});
    expect(retried.status).toBe('completed');
    expect(retried.compaction!.attempts).toBe(2);
    const steps = await listCompactionSteps(w.resources.db, compaction.id);
    expect(steps.map((s) => [s.attempt, s.step, s.status])).toEqual([
      [1, 'prune', 'completed'],
      [1, 'summarize', 'failed'],
      [2, 'prune', 'completed'],
      [2, 'summarize', 'completed'],
      [2, 'finalize', 'completed'],
    ]);
  });

  it('fences a superseded attempt: the stalled worker writes nothing', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const stalled = (await claimCompaction(w.resources.db, compaction.id, new Date()))?.compaction;

    const fresh = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(fresh.status).toBe('completed');
    expect(fresh.compaction!.fence).toBe(stalled!.fence + 1);

    await expect(
      completeCompaction(w.resources.db, {
        compactionId: compaction.id,
        fence: stalled!.fence,
        sessionPk: session.pk,
        summaryMessages: [],
        boundarySeq: 1,
        tokensBefore: 0,
        messagesBefore: 0,
        finishedAt: new Date(),
      }),
    ).rejects.toBeInstanceOf(StaleAttemptError);
    expect(await runCompaction(w.resources, compaction.id, { lastAttempt: true })).toEqual({
      status: 'inactive',
      compaction: null,
    });
    expect((await findCompaction(w.resources.db, compaction.id))?.boundarySeq).toBe(
      fresh.compaction!.boundarySeq,
    );
  });

  it('skips a session with nothing to compact', async () => {
    const session = await w.seedSession([
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'hello' }], finish: 'stop' },
    ]);
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('skipped');
    expect(result.compaction).toMatchObject({ status: 'skipped', errorCode: 'nothing_to_compact' });
  });

  it('writes the [Compacted …] summary without the LLM for the truncate strategy', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }));
    const seen = w.stub.requests.length;
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      strategy: 'truncate',
    });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    expect(w.stub.requests.length).toBe(seen);
    expect(textOf((await w.context(session.pk)).messages[1])).toMatch(/^\[Compacted \d+ messages/);
  });
});

describe('events while compacting', () => {
  it('sends them in order without waiting for the publisher; one that never answers holds nothing up', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 4 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const sent: string[] = [];
    const result = await runCompaction(
      {
        ...w.resources,
        events: {
          publish: (event) => {
            sent.push(event.type === 'compaction.step' ? `step:${String(event.data.step)}` : event.type);
            return new Promise<void>(() => undefined); // Redis never answers
          },
        },
      },
      compaction.id,
      { lastAttempt: true },
    );
    expect(result.status).toBe('completed');
    expect(sent).toEqual([
      'compaction.started',
      'step:prune',
      'step:summarize',
      'step:finalize',
      'compaction.completed',
      'session.compacted',
    ]);
  });

  it('a publisher that fails does not fail the compaction; the failure is logged without message text', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 4 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const warnings: Array<[Record<string, unknown>, string]> = [];
    const result = await runCompaction(
      {
        ...w.resources,
        log: { info: () => undefined, warn: (fields, message) => warnings.push([fields, message]) },
        events: { publish: () => Promise.reject(new Error('redis down')) },
      },
      compaction.id,
      { lastAttempt: true },
    );
    expect(result.status).toBe('completed');
    await vi.waitFor(() => expect(warnings.filter(([, m]) => m === 'event not published')).toHaveLength(6));
    expect(warnings[0]![0]).toMatchObject({ compactionId: compaction.id, type: 'compaction.started' });
  });
});

describe('requestCompaction', () => {
  it('returns the active compaction to a second request, and the same one for a repeated Idempotency-Key', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 1 }));
    const first = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      idempotencyKey: 'k1',
    });
    const second = await requestCompaction(w.resources.db, session, { reason: 'auto' });
    expect(second).toEqual({ compaction: first.compaction, created: false });

    await runCompaction(w.resources, first.compaction.id, { lastAttempt: true });
    const repeated = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      idempotencyKey: 'k1',
    });
    expect(repeated.created).toBe(false);
    expect(repeated.compaction.id).toBe(first.compaction.id);
    const fresh = await requestCompaction(w.resources.db, session, { reason: 'overflow' });
    expect(fresh.created).toBe(true);
    expect(fresh.compaction).toMatchObject({ reason: 'overflow', force: true });
  });
});
