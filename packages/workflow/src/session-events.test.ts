import { describe, expect, it } from 'vitest';
import { SessionEventPayload, type SessionEventMessage } from '@compactor/contract';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { contractIssue, useWorkflow } from './test-support/workflow';
import { pruneSession } from './prune-session';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';
import { announceEvent, type SessionEvent, type SessionEventPublisher } from './session-events';

const w = useWorkflow();

/** Each published event as a client receives it: parsed with the contract's union. */
function received(events: readonly SessionEvent[]): SessionEventMessage[] {
  return events.map(({ type, sessionId, compactionId, at, data }) =>
    SessionEventPayload.parse({ type, sessionId, compactionId, at, data }),
  );
}

describe('announceEvent', () => {
  const at = new Date('2026-01-05T10:02:07.800Z');
  const session = { pk: 7, id: 'support-42' };

  it("publishes the contract's envelope: the session's key and id, the compaction, when, the payload", async () => {
    const sent: SessionEvent[] = [];
    const publisher: SessionEventPublisher = { publish: async (event) => void sent.push(event) };
    await announceEvent(publisher, at, { session, compactionId: 'cmp_1' }, 'compaction.step', {
      step: 'summarize',
      attempt: 2,
    });
    await announceEvent(publisher, at, { session, compactionId: null }, 'session.deleted', {});
    await announceEvent(undefined, at, { session, compactionId: null }, 'session.deleted', {});
    expect(sent).toEqual([
      {
        type: 'compaction.step',
        sessionPk: 7,
        sessionId: 'support-42',
        compactionId: 'cmp_1',
        at: '2026-01-05T10:02:07.800Z',
        data: { step: 'summarize', attempt: 2 },
      },
      {
        type: 'session.deleted',
        sessionPk: 7,
        sessionId: 'support-42',
        compactionId: null,
        at: '2026-01-05T10:02:07.800Z',
        data: {},
      },
    ]);
    expect(sent.map(contractIssue)).toEqual([null, null]);
  });

  it('does not compile with a payload that is not the type’s', () => {
    // @ts-expect-error a step event names its step
    void announceEvent(undefined, at, { session, compactionId: 'cmp_1' }, 'compaction.step', { attempt: 1 });
    void announceEvent(undefined, at, { session, compactionId: 'cmp_1' }, 'compaction.step', {
      // @ts-expect-error `step` is one of the compaction's steps
      step: 'compact',
      attempt: 1,
    });
    void announceEvent(undefined, at, { session, compactionId: null }, 'prune.completed', {
      jobId: 'prn_1',
      parts: 1,
      // @ts-expect-error a prune reports counts, not text
      tokens: '12',
    });
    // @ts-expect-error a prune job's event concerns no compaction
    void announceEvent(undefined, at, { session, compactionId: 'cmp_1' }, 'prune.completed', {
      jobId: 'prn_1',
      parts: 1,
      tokens: 12,
    });
    // @ts-expect-error every compaction event names its compaction
    void announceEvent(undefined, at, { session, compactionId: null }, 'compaction.skipped', {
      reason: 'none',
    });
    expect(contractIssue({ ...envelope('compaction.step'), data: { attempt: 1 } })).toMatch(
      /^compaction.step: /,
    );
  });

  it('a publisher takes only typed events', () => {
    const publisher: SessionEventPublisher = { publish: async () => undefined };
    const base = { sessionPk: 1, sessionId: 's1', at: at.toISOString() };
    void publisher.publish({
      ...base,
      type: 'prune.completed',
      compactionId: null,
      data: {
        jobId: 'p',
        parts: 1,
        tokens: 2,
        cache: { invalidatedTokens: 0, rewriteCostUsd: 0, savingPerTurnUsd: 0, breakEvenTurns: 0 },
      },
    });
    void publisher.publish({
      ...base,
      type: 'prune.completed',
      compactionId: null,
      // @ts-expect-error a prune event's payload has counts, not the compaction's sizes
      data: { prunedParts: 2 },
    });
    // @ts-expect-error a compaction event names its compaction
    void publisher.publish({
      ...base,
      type: 'compaction.step',
      compactionId: null,
      data: { step: 'prune', attempt: 1 },
    });
    expect(typeof publisher.publish).toBe('function');
  });

  it('the contract check catches a wrong payload, a field it does not name, and a misplaced compaction id', () => {
    const cache = {
      invalidatedTokens: 0,
      rewriteCostUsd: null,
      savingPerTurnUsd: null,
      breakEvenTurns: null,
    };
    expect(
      contractIssue({ ...envelope('prune.completed'), data: { jobId: 'p', parts: 1, tokens: 2, cache } }),
    ).toBe(null);
    expect(
      contractIssue({ ...envelope('prune.completed'), data: { parts: 1, tokens: 2, cache } }),
    ).not.toBeNull();
    expect(
      contractIssue({
        ...envelope('prune.completed'),
        data: { jobId: 'p', parts: 1, tokens: 2, cache, text: 'x' },
      }),
    ).toMatch(/fields the contract does not name/);
    expect(
      contractIssue({ ...envelope('compaction.skipped'), compactionId: null, data: { reason: 'none' } }),
    ).not.toBeNull();
  });
});

function envelope(type: SessionEvent['type']): SessionEvent {
  return {
    type,
    sessionPk: 1,
    sessionId: 's',
    compactionId: type === 'prune.completed' || type === 'session.deleted' ? null : 'cmp_1',
    at: '2026-01-05T10:02:07.800Z',
    data: {},
  };
}

describe('the events the workflow publishes', () => {
  it('each parse with the contract union, typed by their type: an automatic compaction and a prune', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 4 }), {
      policy: { continueMessage: 'Continue if you have next steps' },
    });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'auto' });
    expect((await runCompaction(w.resources, compaction.id, { lastAttempt: true })).status).toBe('completed');
    const pruned = await pruneSession(w.resources, session.pk, { jobId: 'prn_events' });

    const events = received(w.published);
    expect(events.map((e) => e.type)).toEqual([
      'compaction.started',
      'compaction.step',
      'compaction.step',
      'compaction.step',
      'compaction.completed',
      'session.compacted',
      'prune.completed',
    ]);
    // Narrowed on `type`, each payload reads without a cast.
    const steps = events.flatMap((e) => (e.type === 'compaction.step' ? [e.data.step] : []));
    expect(steps).toEqual(['prune', 'summarize', 'finalize']);
    const started = events.find((e) => e.type === 'compaction.started');
    expect(started?.type === 'compaction.started' && started.data).toEqual({ attempt: 1, reason: 'auto' });
    const compacted = events.find((e) => e.type === 'session.compacted');
    if (compacted?.type !== 'session.compacted') throw new Error('no session.compacted');
    expect(compacted.data.continueWith).toEqual({
      role: 'user',
      text: 'Continue if you have next steps',
      metadata: { type: 'compaction_continue' },
    });
    expect(compacted.data.tokensAfter).toBeLessThan(compacted.data.tokensBefore!);
    expect(events.at(-1)).toEqual({
      type: 'prune.completed',
      sessionId: session.id,
      compactionId: null,
      at: expect.any(String),
      data: { jobId: 'prn_events', parts: pruned.parts, tokens: pruned.tokens, cache: pruned.cache },
    });
  });

  it('a failed compaction announces its code only', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }), {
      policy: { fallback: 'fail' },
    });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    w.stub.setFaults({ status: 401 });
    try {
      expect((await runCompaction(w.resources, compaction.id, { lastAttempt: true })).status).toBe('failed');
    } finally {
      w.stub.setFaults({});
    }
    const failed = received(w.published).at(-1);
    expect(failed).toMatchObject({
      type: 'compaction.failed',
      compactionId: compaction.id,
      data: { status: 'failed', error: { code: 'llm_fatal' } },
    });
  });
});
