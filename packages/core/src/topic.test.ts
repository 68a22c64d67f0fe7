import { describe, expect, it } from 'vitest';
import type { Message } from './model';
import { POLICY_PRESETS } from './policy';
import { storedTokens } from './tokens';
import {
  applyMinVerbatimExchanges,
  findVerbatimStart,
  planTopicCompaction,
  TOPIC_DEFAULTS,
  topicTriggerReached,
  type TopicPlan,
} from './topic';
import {
  buildTopicDetectionRequest,
  NO_TOPIC_BOUNDARY,
  parseTopicBoundary,
  type TopicBoundary,
} from './topic-detection';

function message(seq: number, role: Message['role'], tokens: number, summary = false): Message {
  return {
    id: `m${seq}`,
    seq,
    role,
    parts: [{ type: 'text', text: `message ${seq}`, tokens }],
    finish: null,
    error: null,
    usage: null,
    createdAt: '2025-01-01T00:00:00Z',
    metadata: {},
    summary,
    compactionId: null,
  };
}

/** `count` alternating user/assistant messages of `tokens` each; seqs start at 100 so indices and seqs differ. */
function session(count: number, tokens: number): Message[] {
  return Array.from({ length: count }, (_, i) =>
    message(100 + i, i % 2 === 0 ? 'user' : 'assistant', tokens),
  );
}

const boundary = (
  boundaryIndex: number | null,
  confidence: number,
  summary = 'Old topic: fixed parser.py',
): TopicBoundary => ({
  boundaryIndex,
  boundaryReason: 'switch',
  confidence,
  summary,
});

describe('findVerbatimStart', () => {
  it.each([
    // 20 × 500 tokens, window 3,000: the newest 6 messages fit, the 7th overflows.
    [session(20, 500), 3000, 14],
    [session(20, 500), 2999, 15],
    [session(20, 500), 20_000, 0],
    [session(4, 5000), 3000, 4], // the newest message alone overflows: empty window
    [[], 3000, 0],
  ])('%#', (messages, budget, expected) => {
    expect(findVerbatimStart(messages, budget)).toBe(expected);
  });
});

describe('applyMinVerbatimExchanges', () => {
  const messages = session(10, 100);
  it.each([
    [8, 2, 6], // kept [8, 9] holds one user message: prepend 7, 6
    [8, 1, 8],
    [6, 2, 6],
    [9, 2, 6],
    [1, 2, 1],
    [3, 6, 0], // fewer user messages than asked for in the whole history: keep everything
    [8, 0, 8],
    [12, 1, 8], // out-of-range start is clamped
  ])('keepFrom %d, min %d → %d', (keepFrom, min, expected) => {
    expect(applyMinVerbatimExchanges(messages, keepFrom, min)).toBe(expected);
  });

  it('does not count summary messages as user exchanges', () => {
    const withSummary = [
      message(1, 'user', 10),
      message(2, 'assistant', 10),
      message(3, 'user', 10, true),
      message(4, 'assistant', 10),
    ];
    expect(applyMinVerbatimExchanges(withSummary, 2, 1)).toBe(0);
  });
});

describe('planTopicCompaction (seed defaults: trigger 6,000, verbatim window 3,000)', () => {
  // 20 messages × 500 tokens = 10,000 > 6,000; verbatim window starts at index 14 (users 14, 16, 18).
  const messages = session(20, 500);
  const window = { start: 0, size: 20 };
  const plan = (
    b: TopicBoundary,
    extra: Partial<Parameters<typeof planTopicCompaction>[0]> = {},
  ): TopicPlan =>
    planTopicCompaction({
      messages,
      boundary: b,
      window,
      triggerTokens: TOPIC_DEFAULTS.triggerTokens,
      verbatimWindowTokens: TOPIC_DEFAULTS.verbatimWindowTokens,
      ...extra,
    });

  it.each<[string, TopicBoundary, Partial<TopicPlan>]>([
    [
      'boundary inside the window, confident → truncate-only',
      boundary(16, 0.85),
      { case: 'truncate-only', keepFrom: 16, boundarySeq: 116, droppedMessages: 16, summaryText: null },
    ],
    [
      'boundary exactly at the window start, confidence exactly 0.5 → truncate-only',
      boundary(14, 0.5),
      { case: 'truncate-only', keepFrom: 14 },
    ],
    [
      'boundary inside the window, low confidence → summarize',
      boundary(16, 0.49),
      { case: 'summarize', keepFrom: 14, summaryText: 'Old topic: fixed parser.py' },
    ],
    [
      'boundary before the window → summarize at the window',
      boundary(10, 0.9),
      { case: 'summarize', keepFrom: 14, boundaryIndex: 10, verbatimStart: 14 },
    ],
    [
      'no boundary → summarize at the window',
      boundary(null, 0.9),
      { case: 'summarize', keepFrom: 14, boundaryIndex: null },
    ],
    [
      'safe default → old messages dropped without a summary',
      { ...NO_TOPIC_BOUNDARY },
      { case: 'summarize', keepFrom: 14, summaryText: null },
    ],
    [
      'late boundary → extended to keep 2 user messages',
      boundary(18, 0.9),
      { case: 'truncate-only', keepFrom: 16, extendedForMinExchanges: true },
    ],
    [
      'boundary outside the detection window is ignored',
      boundary(25, 0.9),
      { case: 'summarize', keepFrom: 14, boundaryIndex: null },
    ],
  ])('%s', (_name, detected, expected) => {
    expect(plan(detected)).toMatchObject(expected);
  });

  it('none: below the trigger (not exceeding it), empty history, or nothing before what is kept', () => {
    expect(plan(boundary(16, 0.9), { triggerTokens: 10_000 })).toEqual({
      case: 'none',
      reason: 'below-trigger',
    });
    expect(plan(boundary(16, 0.9), { historyTokens: 5000 })).toEqual({
      case: 'none',
      reason: 'below-trigger',
    });
    expect(plan(boundary(16, 0.9), { messages: [] })).toEqual({ case: 'none', reason: 'empty' });
    expect(plan(boundary(null, 0), { verbatimWindowTokens: 20_000 })).toEqual({
      case: 'none',
      reason: 'nothing-to-drop',
    });
    expect(plan(boundary(0, 0.9), { verbatimWindowTokens: 20_000 })).toEqual({
      case: 'none',
      reason: 'nothing-to-drop',
    });
  });

  it('honours the policy thresholds', () => {
    expect(plan(boundary(16, 0.6), { minConfidence: 0.7 })).toMatchObject({
      case: 'summarize',
      keepFrom: 14,
    });
    expect(plan(boundary(18, 0.9), { minVerbatimExchanges: 1 })).toMatchObject({
      case: 'truncate-only',
      keepFrom: 18,
      extendedForMinExchanges: false,
    });
    expect(plan(boundary(16, 0.9), { minVerbatimExchanges: 4 })).toMatchObject({
      case: 'truncate-only',
      keepFrom: 12,
      extendedForMinExchanges: true,
    });
  });
});

describe("planTopicCompaction with the seed's example config (trigger 24,000, verbatim window 4,000)", () => {
  // 60 × 500 = 30,000 tokens > 24,000; the newest 8 messages (4,000 tokens) form the verbatim
  // window (index 52); the detector sees the newest 50 (indices 10–59).
  const messages = session(60, 500);
  const request = buildTopicDetectionRequest(messages);
  const plan = (raw: string): TopicPlan =>
    planTopicCompaction({
      messages,
      boundary: parseTopicBoundary(raw),
      window: request.window,
      triggerTokens: 24_000,
      verbatimWindowTokens: 4000,
    });

  it('maps the detector index back to the session', () => {
    expect(request.window).toEqual({ start: 10, size: 50 });
    expect(
      plan('{"boundary_index": 44, "boundary_reason": "API work", "confidence": 0.85, "summary": "s"}'),
    ).toMatchObject({
      case: 'truncate-only',
      keepFrom: 54,
      boundaryIndex: 54,
      boundarySeq: 154,
      verbatimStart: 52,
    });
    expect(
      plan(
        '```json\n{"boundary_index": 40, "confidence": 0.85, "summary": "Fixed a regex bug in parser.py"}\n```',
      ),
    ).toMatchObject({
      case: 'summarize',
      keepFrom: 52,
      boundaryIndex: 50,
      summaryText: 'Fixed a regex bug in parser.py',
    });
    expect(plan('the model rambled')).toMatchObject({ case: 'summarize', keepFrom: 52, summaryText: null });
  });

  it('checks the trigger before the detector call', () => {
    expect(storedTokens(messages)).toBe(30_000);
    expect(topicTriggerReached(messages, 24_000)).toBe(true);
    expect(topicTriggerReached(messages, 30_000)).toBe(false);
    expect(topicTriggerReached([], 0)).toBe(false);
  });
});

describe("wired to the policy's topic preset", () => {
  it('uses its trigger, thresholds and detector bounds', () => {
    const policy = POLICY_PRESETS.topic;
    const triggerTokens = policy.trigger.kind === 'tokens' ? policy.trigger.tokens : 0;
    expect(triggerTokens).toBe(TOPIC_DEFAULTS.triggerTokens);
    const messages = session(20, 500);
    const request = buildTopicDetectionRequest(messages, policy.topic);
    const plan = planTopicCompaction({
      messages,
      boundary: parseTopicBoundary('{"boundary_index": 16, "confidence": 0.85, "summary": "s"}'),
      window: request.window,
      triggerTokens,
      ...policy.topic,
    });
    expect(plan).toMatchObject({ case: 'truncate-only', keepFrom: 16 });
  });
});
