import { describe, expect, it } from 'vitest';
import type { Message } from './model';
import { DEFAULT_POLICY, POLICY_PRESETS, TRIGGER_DEFAULTS } from './policy';
import { buildSummaryMessages } from './summary-messages';
import { storedTokens } from './tokens';
import { applyMinVerbatimExchanges, planTopicCompaction, topicTriggerReached, type TopicPlan } from './topic';
import {
  buildTopicDetectionRequest,
  findVerbatimStart,
  NO_TOPIC_BOUNDARY,
  parseTopicBoundary,
  type TopicBoundary,
} from './topic-detection';
import { message, text } from './test-support/builders';

/** The reference's table: trigger 6,000, verbatim window 3,000 (the policy's defaults). */
const SEED = {
  triggerTokens: TRIGGER_DEFAULTS.tokens.tokens,
  verbatimWindowTokens: DEFAULT_POLICY.topic.verbatimWindowTokens,
};

/** A message whose one text, `message <seq>`, has `tokens` tokens. */
const sized = (seq: number, role: Message['role'], tokens: number, summary = false): Message =>
  message(seq, role, [text(`message ${seq}`, tokens)], { summary });

/** `count` alternating user/assistant messages of `tokens` each; seqs start at 100 so indices and seqs differ. */
function session(count: number, tokens: number): Message[] {
  return Array.from({ length: count }, (_, i) => sized(100 + i, i % 2 === 0 ? 'user' : 'assistant', tokens));
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
      sized(1, 'user', 10),
      sized(2, 'assistant', 10),
      sized(3, 'user', 10, true),
      sized(4, 'assistant', 10),
    ];
    expect(applyMinVerbatimExchanges(withSummary, 2, 1)).toBe(0);
  });
});

describe('planTopicCompaction (the reference defaults: trigger 6,000, verbatim window 3,000)', () => {
  // 20 messages × 500 tokens = 10,000 > 6,000; verbatim window starts at index 14 (users 14, 16, 18).
  const messages = session(20, 500);
  const request = buildTopicDetectionRequest(messages);
  const plan = (
    b: TopicBoundary,
    extra: Partial<Parameters<typeof planTopicCompaction>[0]> = {},
  ): TopicPlan => planTopicCompaction({ messages, boundary: b, window: request.window, ...SEED, ...extra });

  it('the detection request asks for a summary of exactly what summarize drops', () => {
    expect(request.window).toEqual({ start: 0, size: 20, summaryEnd: 14 });
  });

  it.each<[string, TopicBoundary, Partial<TopicPlan>]>([
    [
      'boundary inside the window, confident → truncate-only, no summary',
      boundary(16, 0.85),
      {
        case: 'truncate-only',
        keepFrom: 16,
        boundarySeq: 116,
        droppedMessages: 16,
        summaryText: null,
        needsSummarizer: false,
        summarySource: null,
      },
    ],
    [
      'boundary exactly at the window start, confidence exactly 0.5 → truncate-only',
      boundary(14, 0.5),
      { case: 'truncate-only', keepFrom: 14 },
    ],
    [
      'boundary inside the window, low confidence → summarize, by the summarizer',
      boundary(16, 0.49),
      {
        case: 'summarize',
        keepFrom: 14,
        summaryText: null,
        needsSummarizer: true,
        summarySource: 'summarizer',
      },
    ],
    [
      'boundary before the window → summarize at the window',
      boundary(10, 0.9),
      { case: 'summarize', keepFrom: 14, boundaryIndex: 10, verbatimStart: 14, needsSummarizer: true },
    ],
    [
      'no boundary → summarize at the window',
      boundary(null, 0.9),
      { case: 'summarize', keepFrom: 14, boundaryIndex: null, needsSummarizer: true },
    ],
    [
      'safe default → summarize, the summarizer writes the summary (nothing is dropped unsummarised)',
      { ...NO_TOPIC_BOUNDARY },
      {
        case: 'summarize',
        keepFrom: 14,
        summaryText: null,
        needsSummarizer: true,
        summarySource: 'summarizer',
      },
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
    [
      'a boundary on an assistant message keeps its whole turn',
      boundary(17, 0.9),
      { case: 'truncate-only', keepFrom: 16, movedToTurnStart: true, extendedForMinExchanges: false },
    ],
  ])('%s', (_name, detected, expected) => {
    expect(plan(detected)).toMatchObject(expected);
  });

  describe("summaryFrom: 'detector' (the reference)", () => {
    it.each<[string, TopicBoundary, Partial<TopicPlan>]>([
      [
        "the detector's summary, when it covers what is dropped",
        boundary(10, 0.9),
        {
          case: 'summarize',
          keepFrom: 14,
          summaryText: 'Old topic: fixed parser.py',
          summarySource: 'detector',
        },
      ],
      [
        'also with no boundary: the request asked for a summary anyway',
        boundary(null, 0, 'Fixed parser.py; next: routes.py'),
        { case: 'summarize', summaryText: 'Fixed parser.py; next: routes.py', needsSummarizer: false },
      ],
      [
        'an empty detector summary (the safe default) → the summarizer, never a silent drop',
        { ...NO_TOPIC_BOUNDARY },
        {
          case: 'summarize',
          keepFrom: 14,
          summaryText: null,
          needsSummarizer: true,
          summarySource: 'summarizer',
        },
      ],
      [
        'truncate-only still writes no summary',
        boundary(16, 0.9),
        { case: 'truncate-only', summaryText: null, needsSummarizer: false },
      ],
    ])('%s', (_name, detected, expected) => {
      expect(plan(detected, { summaryFrom: 'detector' })).toMatchObject(expected);
    });

    it('uses the summarizer when the detector was not asked to summarise what is dropped', () => {
      const detected = boundary(null, 0, 'partial');
      // A window without `summaryEnd` (the detector was asked for no summary).
      expect(plan(detected, { summaryFrom: 'detector', window: { start: 0, size: 20 } })).toMatchObject({
        needsSummarizer: true,
      });
      // A summary of fewer messages than are dropped (e.g. requested with a larger verbatim window).
      const narrow = buildTopicDetectionRequest(messages, { verbatimWindowTokens: 6000 }).window;
      expect(narrow.summaryEnd).toBe(8);
      expect(plan(detected, { summaryFrom: 'detector', window: narrow })).toMatchObject({
        needsSummarizer: true,
      });
      // The detector saw only the newest 10 messages: older ones would be dropped unseen.
      const clipped = buildTopicDetectionRequest(messages, { maxMessages: 10 }).window;
      expect(clipped).toEqual({ start: 10, size: 10, summaryEnd: null });
      expect(plan(detected, { summaryFrom: 'detector', window: clipped })).toMatchObject({
        needsSummarizer: true,
      });
    });
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

describe('planTopicCompaction keeps the current turn and cuts at turn starts', () => {
  const plan = (messages: Message[], b: TopicBoundary = { ...NO_TOPIC_BOUNDARY }): TopicPlan =>
    planTopicCompaction({
      messages,
      boundary: b,
      window: buildTopicDetectionRequest(messages).window,
      ...SEED,
      minVerbatimExchanges: 0,
    });

  it.each<[string, Message[], Partial<TopicPlan>]>([
    [
      'a newest assistant message larger than the window: its user message stays',
      [
        sized(1, 'user', 2000),
        sized(2, 'assistant', 2000),
        sized(3, 'user', 100),
        sized(4, 'assistant', 5000),
      ],
      { case: 'summarize', keepFrom: 2, boundarySeq: 3, verbatimStart: 4, movedToTurnStart: true },
    ],
    [
      'a newest user message larger than the window stays',
      [sized(1, 'user', 2000), sized(2, 'assistant', 2000), sized(3, 'user', 5000)],
      { case: 'summarize', keepFrom: 2, boundarySeq: 3, verbatimStart: 3 },
    ],
    [
      'a window starting mid-turn moves back to the turn start',
      [
        sized(1, 'user', 3000),
        sized(2, 'assistant', 3000),
        sized(3, 'user', 500),
        sized(4, 'assistant', 1000),
        sized(5, 'assistant', 1000),
        sized(6, 'assistant', 1000),
      ],
      { case: 'summarize', keepFrom: 2, verbatimStart: 3, movedToTurnStart: true },
    ],
  ])('%s', (_name, messages, expected) => {
    expect(plan(messages)).toMatchObject(expected);
  });

  it('one turn that fills the history leaves nothing to drop', () => {
    const messages = [sized(1, 'user', 100), sized(2, 'assistant', 4000), sized(3, 'assistant', 4000)];
    expect(plan(messages)).toEqual({ case: 'none', reason: 'nothing-to-drop' });
    const noUser = [sized(1, 'assistant', 4000), sized(2, 'assistant', 4000)];
    expect(plan(noUser)).toEqual({ case: 'none', reason: 'nothing-to-drop' });
  });
});

describe('planTopicCompaction never drops a previous summary unmerged', () => {
  // A previous topic compaction's system summary, then 20 × 500 tokens.
  const previous = buildSummaryMessages({
    style: 'system',
    summaryText: '## Goal\nShip the parser. Never use regex lookbehind.',
    compactionId: 'c1',
    auto: true,
    messagesCompacted: 12,
    createdAt: '2025-01-01T00:00:00Z',
  }).map((m, i) => ({ ...m, seq: 50 + i }));
  const messages = [...previous, ...session(20, 500)];
  const request = buildTopicDetectionRequest(messages);
  const plan = (b: TopicBoundary, summaryFrom?: 'detector' | 'summarizer'): TopicPlan =>
    planTopicCompaction({
      messages,
      boundary: b,
      window: request.window,
      ...SEED,
      ...(summaryFrom ? { summaryFrom } : {}),
    });

  it('shows the previous summary whole, outside the indexed messages', () => {
    expect(request.window).toEqual({ start: 1, size: 20, summaryEnd: 15 });
    expect(request.user).toContain(
      '<previous-summary>\n## Goal\nShip the parser. Never use regex lookbehind.\n</previous-summary>',
    );
    expect(request.user).toContain('[0] USER: message 100');
  });

  it.each<[string, TopicBoundary, 'detector' | 'summarizer' | undefined, Partial<TopicPlan>]>([
    [
      'no boundary, no summary (seed: "dropped"): the summarizer merges it',
      { ...NO_TOPIC_BOUNDARY },
      'detector',
      {
        case: 'summarize',
        keepFrom: 15,
        droppedMessages: 15,
        // The merged summary stands for the previous one's 12 messages and the 14 dropped now.
        summaryCovers: 26,
        summaryText: null,
        needsSummarizer: true,
      },
    ],
    [
      "the detector's summary (asked to merge the previous one)",
      boundary(null, 0, 'Merged summary'),
      'detector',
      { case: 'summarize', summaryText: 'Merged summary', summarySource: 'detector', summaryCovers: 26 },
    ],
    [
      'summarizer mode ignores the detector summary',
      boundary(null, 0, 'Merged summary'),
      undefined,
      { case: 'summarize', summaryText: null, needsSummarizer: true },
    ],
    [
      'truncate-only carries the previous summary over unchanged',
      boundary(16, 0.9),
      'detector',
      {
        case: 'truncate-only',
        keepFrom: 17,
        summaryText: '## Goal\nShip the parser. Never use regex lookbehind.',
        summarySource: 'previous-summary',
        needsSummarizer: false,
        // The carried summary covers its own 12 messages, not the 16 of the topic dropped with it.
        summaryCovers: 12,
      },
    ],
  ])('%s', (_name, detected, summaryFrom, expected) => {
    expect(plan(detected, summaryFrom)).toMatchObject(expected);
  });

  it('dropping only the previous summary is not a compaction', () => {
    expect(
      planTopicCompaction({
        messages,
        boundary: boundary(1, 0.9),
        window: request.window,
        ...SEED,
        minVerbatimExchanges: 10,
      }),
    ).toEqual({ case: 'none', reason: 'nothing-to-drop' });
  });
});

describe("planTopicCompaction with the reference's example config (trigger 24,000, verbatim window 4,000)", () => {
  // 60 × 500 = 30,000 tokens > 24,000; the newest 8 messages (4,000 tokens) form the verbatim
  // window (index 52); the detector sees the newest 50 (indices 10–59).
  const messages = session(60, 500);
  const request = buildTopicDetectionRequest(messages, { verbatimWindowTokens: 4000 });
  const plan = (raw: string): TopicPlan =>
    planTopicCompaction({
      messages,
      boundary: parseTopicBoundary(raw),
      window: request.window,
      triggerTokens: 24_000,
      verbatimWindowTokens: 4000,
      summaryFrom: 'detector',
    });

  it('maps the detector index back to the session', () => {
    expect(request.window).toEqual({ start: 10, size: 50, summaryEnd: null });
    expect(
      plan('{"boundary_index": 44, "boundary_reason": "API work", "confidence": 0.85, "summary": "s"}'),
    ).toMatchObject({
      case: 'truncate-only',
      keepFrom: 54,
      boundaryIndex: 54,
      boundarySeq: 154,
      verbatimStart: 52,
    });
    // The detector saw 50 of the 52 dropped messages: its summary cannot stand for them.
    expect(
      plan(
        '```json\n{"boundary_index": 40, "confidence": 0.85, "summary": "Fixed a regex bug in parser.py"}\n```',
      ),
    ).toMatchObject({
      case: 'summarize',
      keepFrom: 52,
      boundaryIndex: 50,
      summaryText: null,
      needsSummarizer: true,
    });
    expect(plan('the model rambled')).toMatchObject({
      case: 'summarize',
      keepFrom: 52,
      needsSummarizer: true,
    });
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
    expect(triggerTokens).toBe(6000);
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

  it("writes the summary as each preset says: the reference's detector, or the summarizer by default", () => {
    const messages = session(20, 500);
    const detected = parseTopicBoundary('{"boundary_index": null, "confidence": 0, "summary": "s"}');
    const planFor = (topic: typeof DEFAULT_POLICY.topic) =>
      planTopicCompaction({
        messages,
        boundary: detected,
        window: buildTopicDetectionRequest(messages, topic).window,
        triggerTokens: 6000,
        ...topic,
      });
    expect(planFor(POLICY_PRESETS.topic.topic)).toMatchObject({
      summaryText: 's',
      summarySource: 'detector',
    });
    expect(planFor(DEFAULT_POLICY.topic)).toMatchObject({ summaryText: null, needsSummarizer: true });
  });
});
