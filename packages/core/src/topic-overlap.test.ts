/**
 * Topic mode's cut (docs/PRESETS.md, `topic`: truncate-only, summarize, minimum exchanges) on its
 * reference's own numbers, and the invariant every strategy holds: what a summary covers and what is kept
 * verbatim never overlap.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPinnedMessage } from './context';
import type { Message, Part } from './model';
import { POLICY_PRESETS, resolvePolicy } from './policy';
import { planCompaction } from './split-turn';
import { countLeadingSummaryMessages } from './summary-messages';
import { assistant, conversation, messages, summary, text, toolPart, user } from './test-support/builders';
import { planTopicCompaction, type TopicPlan } from './topic';
import { buildTopicDetectionRequest, type TopicBoundary } from './topic-detection';

/** The session: u, a, u, a, a, u, a of [2000, 2000, 1000, 1000, 1000, 500, 500] tokens. */
const SESSION = messages('uauaaua', [2000, 2000, 1000, 1000, 1000, 500, 500]);
const NO_BOUNDARY: TopicBoundary = { boundaryIndex: null, boundaryReason: '', confidence: 0, summary: 'old' };

interface Rules {
  cutAt: 'turn-start' | 'message';
  minVerbatimExchanges: number;
}

/** Request and plan with the same rules, as the workflow runs them; `answer` is the detector's. */
function topicRun(session: Message[], rules: Rules, answer: TopicBoundary, verbatimWindowTokens = 3000) {
  const request = buildTopicDetectionRequest(session, { verbatimWindowTokens, ...rules });
  const plan = planTopicCompaction({
    messages: session,
    boundary: answer,
    window: request.window,
    triggerTokens: 0,
    verbatimWindowTokens,
    summaryFrom: 'detector',
    ...rules,
  });
  return { request, plan };
}

const kept = (plan: TopicPlan): number | null => (plan.case === 'none' ? null : plan.keepFrom);

describe("topic cut on the topic reference's numbers (verbatim window 3000: messages 3–6 hold exactly 3000)", () => {
  it.each([
    // [case, cutAt, min exchanges, boundary, first kept, detector asked to summarise before]
    ['no boundary, summarize: the reference keeps 3–6, summarises 0–2', 'message', 1, null, 3, 3],
    ['no boundary, turn-start: keeps 2–6, the detector summarises 0–1 only', 'turn-start', 1, null, 2, 2],
    [
      'min 2 exchanges (the reference guarantees it): prepends 2, summary of 0–1 only',
      'message',
      2,
      null,
      2,
      2,
    ],
    ['boundary at 4 (assistant), truncate-only: the reference keeps 4–6', 'message', 1, 4, 4, 3],
    ['boundary at 4, turn-start: keeps from its turn, 2–6', 'turn-start', 1, 4, 2, 2],
  ] as const)('%s', (_name, cutAt, minVerbatimExchanges, boundaryIndex, keepFrom, summaryEnd) => {
    const answer = boundaryIndex === null ? NO_BOUNDARY : { ...NO_BOUNDARY, boundaryIndex, confidence: 0.9 };
    const { request, plan } = topicRun(SESSION, { cutAt, minVerbatimExchanges }, answer);
    expect(kept(plan)).toBe(keepFrom);
    expect(request.window.summaryEnd).toBe(summaryEnd);
    if (plan.case === 'summarize') expect(plan.summarySource).toBe('detector');
  });

  it('the topic preset cuts where the reference does (cutAt: message)', () => {
    const { topic, cutAt } = POLICY_PRESETS.topic;
    const { plan } = topicRun(
      SESSION,
      { cutAt, minVerbatimExchanges: 1 },
      NO_BOUNDARY,
      topic.verbatimWindowTokens,
    );
    expect(plan).toMatchObject({ case: 'summarize', keepFrom: 3, summarySource: 'detector' });
  });

  it('a detector summary of a kept message is not used: the summarizer writes the dropped range', () => {
    // The request was built with the reference's cut (summary of 0–2), the plan keeps from the turn start (2).
    const request = buildTopicDetectionRequest(SESSION, {
      verbatimWindowTokens: 3000,
      cutAt: 'message',
      minVerbatimExchanges: 1,
    });
    const plan = planTopicCompaction({
      messages: SESSION,
      boundary: NO_BOUNDARY,
      window: request.window,
      triggerTokens: 0,
      verbatimWindowTokens: 3000,
      summaryFrom: 'detector',
      cutAt: 'turn-start',
      minVerbatimExchanges: 1,
    });
    expect(plan).toMatchObject({
      case: 'summarize',
      keepFrom: 2,
      summarySource: 'summarizer',
      needsSummarizer: true,
    });
  });

  it('always keeps the newest message, even when it alone overflows the verbatim window', () => {
    const big = messages('uaua', [100, 100, 100, 5000]);
    const { plan } = topicRun(big, { cutAt: 'message', minVerbatimExchanges: 0 }, NO_BOUNDARY);
    expect(kept(plan)).toBe(3);
  });
});

// Generated sessions: optional previous summary, user turns of assistant messages with tool parts.
const sessionArb = fc.record({
  summaries: fc.integer({ min: 0, max: 1 }),
  turns: fc.array(
    fc.record({
      userTokens: fc.integer({ min: 1, max: 3000 }),
      assistants: fc.array(
        fc.record({ tokens: fc.integer({ min: 0, max: 3000 }), tools: fc.integer({ min: 0, max: 2 }) }),
        { maxLength: 5 },
      ),
    }),
    { maxLength: 8 },
  ),
});
const rulesArb = fc.record({
  strategy: fc.constantFrom('summarize', 'truncate', 'topic'),
  cutAt: fc.constantFrom('turn-start', 'message'),
  minVerbatimExchanges: fc.integer({ min: 0, max: 3 }),
  verbatimWindowTokens: fc.integer({ min: 1, max: 8000 }),
  splitTurnMinPrefix: fc.integer({ min: 1, max: 6 }),
  splitTurnShortPrefix: fc.constantFrom('keep', 'summarize'),
  force: fc.boolean(),
  tokenCount: fc.constantFrom('tokenizer', 'chars'),
  boundaryIndex: fc.option(fc.integer({ min: 0, max: 40 })),
  confidence: fc.double({ min: 0, max: 1, noNaN: true }),
});

function buildSession(input: typeof sessionArb extends fc.Arbitrary<infer T> ? T : never): Message[] {
  const built: Message[] = [];
  for (let i = 0; i < input.summaries; i++)
    built.push(summary(`previous summary ${i}`, 200, { seq: 900 + i }));
  for (const turn of input.turns) {
    built.push(user('x'.repeat(turn.userTokens), turn.userTokens));
    for (const spec of turn.assistants) {
      const parts: Part[] = [text('y'.repeat(spec.tokens), spec.tokens)];
      for (let call = 0; call < spec.tools; call++) parts.push(toolPart('read', 400));
      built.push(assistant(parts));
    }
  }
  return conversation(built);
}

/** Ids of the messages a summary describes, and of those kept verbatim, for one strategy. */
function coverage(session: Message[], rules: typeof rulesArb extends fc.Arbitrary<infer T> ? T : never) {
  const policy = resolvePolicy({
    strategy: rules.strategy,
    cutAt: rules.cutAt,
    splitTurnMinPrefix: rules.splitTurnMinPrefix,
    splitTurnShortPrefix: rules.splitTurnShortPrefix,
    tokenCount: rules.tokenCount,
    topic: {
      minVerbatimExchanges: rules.minVerbatimExchanges,
      verbatimWindowTokens: rules.verbatimWindowTokens,
    },
  });
  if (rules.strategy !== 'topic') {
    const plan = planCompaction(session, {
      keepRecentTokens: rules.verbatimWindowTokens,
      force: rules.force,
      policy,
    });
    if (plan === null) return null;
    return { summarised: [...plan.history, ...(plan.turnPrefix ?? [])], kept: plan.kept };
  }
  const unpinned = session.filter((m) => !isPinnedMessage(m));
  const { request, plan } = topicRun(
    unpinned,
    { cutAt: policy.cutAt, minVerbatimExchanges: policy.topic.minVerbatimExchanges },
    {
      boundaryIndex: rules.boundaryIndex,
      boundaryReason: '',
      confidence: rules.confidence,
      summary: 'old topic',
    },
    rules.verbatimWindowTokens,
  );
  if (plan.case === 'none') return null;
  const leading = countLeadingSummaryMessages(unpinned);
  const summaryEnd =
    plan.summarySource === 'detector'
      ? request.window.summaryEnd!
      : plan.summarySource === 'summarizer'
        ? plan.keepFrom
        : plan.summarySource === 'previous-summary'
          ? leading
          : 0;
  return { summarised: unpinned.slice(0, summaryEnd), kept: unpinned.slice(plan.keepFrom) };
}

describe('what is summarised and what is kept never overlap (every strategy)', () => {
  it('holds on generated sessions', () => {
    fc.assert(
      fc.property(sessionArb, rulesArb, (input, rules) => {
        const session = buildSession(input);
        const result = coverage(session, rules);
        if (result === null) return;
        const keptIds = new Set(result.kept.map((m) => m.id));
        expect(result.summarised.filter((m) => keptIds.has(m.id))).toEqual([]);
        // Something is kept, and the newest message always is.
        expect(result.kept.at(-1)?.id).toBe(session.at(-1)?.id);
      }),
      { numRuns: 500 },
    );
  });
});
