import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  SESSION_EVENT_DATA,
  SESSION_EVENT_TYPES,
  SessionEventPayload,
  type SessionEventMap,
  type SessionEventMessage,
  type SessionEventOf,
} from './events.js';

const sizes = {
  tokensBefore: 96_512,
  tokensAfter: 11_204,
  messagesBefore: 118,
  messagesAfter: 23,
  boundarySeq: 96,
  fallback: null,
  cache: { invalidatedTokens: 96_000, rewriteCostUsd: 0, savingPerTurnUsd: 0.0063981, breakEvenTurns: 0 },
};
/** A prune's cache effect on a model without known prices. */
const unpricedCache = {
  invalidatedTokens: 30_000,
  rewriteCostUsd: null,
  savingPerTurnUsd: null,
  breakEvenTurns: null,
};

/** One event of every type, its fields in the order the producers write them. */
const EVENTS: { [T in keyof SessionEventMap]: SessionEventMap[T] } = {
  'compaction.requested': { reason: 'auto', strategy: 'summarize' },
  'compaction.started': { attempt: 1, reason: 'auto' },
  'compaction.step': { step: 'prune', attempt: 1 },
  'compaction.completed': { ...sizes, fallback: { code: 'llm_retries_exhausted' } },
  'compaction.failed': { status: 'failed', error: { code: 'llm_fatal' } },
  'compaction.skipped': { reason: 'no cut point leaves anything to compact' },
  'compaction.reverted': { restoredCompactionId: 'cmp_0', tokens: 96_512, contextMessages: 118 },
  'session.compacted': {
    ...sizes,
    continueWith: {
      role: 'user',
      text: 'Continue if you have next steps',
      metadata: { type: 'compaction_continue' },
    },
    followUp: { compactionId: 'cmp_2' },
  },
  'prune.completed': { jobId: 'prn_1', parts: 3, tokens: 40_000, cache: unpricedCache },
  'prune.skipped': {
    reason: 'cache_warm',
    cache: {
      invalidatedTokens: 90_000,
      rewriteCostUsd: 0.2145,
      savingPerTurnUsd: 0.0126,
      breakEvenTurns: 18,
    },
  },
  'session.deleted': {},
  'task.started': { callId: 'toolu_1', tool: 'Task', status: 'running' },
  'task.finished': { callId: 'toolu_1', tool: 'Task', status: 'completed' },
};

const wire = (type: keyof SessionEventMap, data: unknown) => ({
  type,
  sessionId: 'support-42',
  compactionId:
    type.startsWith('prune.') || type.startsWith('task.') || type === 'session.deleted' ? null : 'cmp_1',
  at: '2026-01-05T10:02:07.800Z',
  data,
});

describe('session events', () => {
  it('type the data of every event type', () => {
    expect(Object.keys(SESSION_EVENT_DATA).sort()).toEqual([...SESSION_EVENT_TYPES].sort());
    expect(Object.keys(EVENTS).sort()).toEqual([...SESSION_EVENT_TYPES].sort());
  });

  it.each(SESSION_EVENT_TYPES)('%s parses as it goes over the wire, unchanged to the byte', (type) => {
    const event = wire(type, EVENTS[type]);
    const parsed = SessionEventPayload.parse(event);
    expect(JSON.stringify(parsed)).toBe(JSON.stringify(event));
  });

  it('rejects an event whose data is not its type’s, or whose compaction id is misplaced', () => {
    const invalid = [
      wire('compaction.step', { attempt: 1 }),
      wire('compaction.step', { step: 'compact', attempt: 1 }),
      wire('compaction.failed', { status: 'failed', error: {} }),
      wire('prune.completed', { jobId: 'prn_1', parts: '3', tokens: 1 }),
      wire('prune.completed', {
        ...EVENTS['prune.completed'],
        cache: { ...unpricedCache, invalidatedTokens: 1.5 },
      }),
      wire('compaction.completed', EVENTS['prune.completed']),
      { ...wire('prune.completed', EVENTS['prune.completed']), compactionId: 'cmp_1' },
      { ...wire('compaction.started', EVENTS['compaction.started']), compactionId: null },
      wire('compaction.unknown' as 'compaction.step', EVENTS['compaction.step']),
    ];
    for (const event of invalid) expect(SessionEventPayload.safeParse(event).success, event.type).toBe(false);
  });

  it('accepts the events of a server from before the cache model (no `cache`)', () => {
    const { cache: _pruneCache, ...prune } = EVENTS['prune.completed'];
    const { cache: _compactionCache, ...completed } = EVENTS['compaction.completed'];
    expect(SessionEventPayload.safeParse(wire('prune.completed', prune)).success).toBe(true);
    expect(SessionEventPayload.safeParse(wire('compaction.completed', completed)).success).toBe(true);
  });

  it('narrow on type: each payload is named, a wrong one does not compile', () => {
    expectTypeOf<SessionEventOf<'prune.completed'>['data']>().toEqualTypeOf<
      SessionEventMap['prune.completed']
    >();
    expectTypeOf<SessionEventOf<'session.deleted'>['compactionId']>().toEqualTypeOf<null>();
    expectTypeOf<SessionEventOf<'compaction.step'>['compactionId']>().toEqualTypeOf<string>();
    const event: SessionEventMessage = SessionEventPayload.parse(
      wire('compaction.step', EVENTS['compaction.step']),
    );
    if (event.type === 'compaction.step')
      expectTypeOf(event.data.step).toEqualTypeOf<'prune' | 'summarize' | 'finalize'>();
    // @ts-expect-error a prune reports counts
    const wrong: SessionEventMap['prune.completed'] = { jobId: 'prn_1', parts: 1 };
    // @ts-expect-error a failure carries its code, not its message
    const failed: SessionEventMap['compaction.failed'] = { status: 'failed', error: { message: 'x' } };
    expect([wrong, failed]).toHaveLength(2);
  });
});
