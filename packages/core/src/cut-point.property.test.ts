import fc from 'fast-check';
import { countLeadingSummaryMessages } from './summary-messages';
import { describe, expect, it } from 'vitest';
import { findCutPoint, isTurnStart } from './cut-point';
import type { Message, Part } from './model';
import { resolvePolicy } from './policy';
import { planCompaction } from './split-turn';
import { assistant, conversation, summary, text, toolPart, user } from './test-support/builders';

// Random views: optional previous summaries, a turn that began before them, then user turns of
// assistant messages with tool calls. Sometimes a client left a call pending and stored its
// result in a later message under the call's id: cutting between the two would orphan the result.
const assistantArb = fc.record({
  tokens: fc.integer({ min: 0, max: 8000 }),
  tools: fc.integer({ min: 0, max: 2 }),
  deferFirstResult: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
  resultsLater: fc.integer({ min: 1, max: 3 }),
});
const turnArb = fc.record({
  userTokens: fc.integer({ min: 0, max: 4000 }),
  assistants: fc.array(assistantArb, { maxLength: 7 }),
});
const viewArb = fc.record({
  summaries: fc.integer({ min: 0, max: 2 }),
  headAssistants: fc.array(assistantArb, { maxLength: 3 }),
  turns: fc.array(turnArb, { maxLength: 10 }),
});
const optionsArb = fc.record({
  keepRecentTokens: fc.integer({ min: 0, max: 40_000 }),
  force: fc.boolean(),
  cutAt: fc.constantFrom('turn-start', 'message'),
  splitTurnMinPrefix: fc.integer({ min: 1, max: 6 }),
  splitTurnShortPrefix: fc.constantFrom('keep', 'summarize'),
  minVerbatimExchanges: fc.integer({ min: 0, max: 3 }),
  topic: fc.boolean(),
});

type ViewInput = typeof viewArb extends fc.Arbitrary<infer T> ? T : never;
type AssistantInput = ViewInput['headAssistants'][number];

function buildView(input: ViewInput): Message[] {
  const messages: Message[] = [];
  for (let i = 0; i < input.summaries; i++)
    messages.push(summary(`summary ${i}`, 300, { seq: 1000 + i, id: `s${i}` }));
  let callCounter = 0;
  // Results still to store: call id → how many assistant messages later.
  let deferred: { callId: string; after: number }[] = [];
  const addAssistant = (spec: AssistantInput): void => {
    const parts: Part[] = [text('thinking', spec.tokens)];
    for (const pending of deferred)
      if (--pending.after === 0) parts.push(toolPart('bash', 500, { callId: pending.callId }));
    deferred = deferred.filter((pending) => pending.after > 0);
    for (let call = 0; call < spec.tools; call++) {
      const callId = `c${callCounter++}`;
      const defer = call === 0 && spec.deferFirstResult;
      parts.push(toolPart('read', 1000, { callId, ...(defer ? { status: 'pending' as const } : {}) }));
      if (defer) deferred.push({ callId, after: spec.resultsLater });
    }
    messages.push(assistant(parts));
  };
  input.headAssistants.forEach(addAssistant);
  for (const turn of input.turns) {
    messages.push(user('ask', turn.userTokens));
    turn.assistants.forEach(addAssistant);
  }
  return conversation(messages);
}

/** Brute force: does cutting at `index` leave a callId on both sides? */
function separatesCallFromResult(messages: Message[], index: number): boolean {
  const before = new Set<string>();
  for (const message of messages.slice(0, index))
    for (const part of message.parts) if (part.type === 'tool') before.add(part.callId);
  return messages
    .slice(index)
    .some((message) => message.parts.some((part) => part.type === 'tool' && before.has(part.callId)));
}

const policyOf = (options: typeof optionsArb extends fc.Arbitrary<infer T> ? T : never) =>
  resolvePolicy({
    cutAt: options.cutAt,
    splitTurnMinPrefix: options.splitTurnMinPrefix,
    splitTurnShortPrefix: options.splitTurnShortPrefix,
    strategy: options.topic ? 'topic' : 'summarize',
    topic: { minVerbatimExchanges: options.minVerbatimExchanges },
  });

describe('findCutPoint properties', () => {
  it('never cuts on a tool result nor between a call and its result; always compacts something new', () => {
    fc.assert(
      fc.property(viewArb, optionsArb, (input, options) => {
        const messages = buildView(input);
        const point = findCutPoint(messages, {
          ...options,
          minKeptUserTurns: options.topic ? options.minVerbatimExchanges : 0,
        });
        if (point === null) return;
        expect(point.index).toBeGreaterThan(countLeadingSummaryMessages(messages));
        expect(point.index).toBeLessThan(messages.length);
        expect(separatesCallFromResult(messages, point.index)).toBe(false);
        if (point.kind === 'turn-start') expect(isTurnStart(messages[point.index]!)).toBe(true);
        if (point.kind === 'forced') expect(options.force).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('force always frees room when more than 2 messages follow the summary and a valid cut exists', () => {
    fc.assert(
      fc.property(viewArb, fc.integer({ min: 0, max: 40_000 }), (input, keepRecentTokens) => {
        const messages = buildView(input);
        const start = countLeadingSummaryMessages(messages);
        const anyValid = messages.some(
          (_, index) => index > start && !separatesCallFromResult(messages, index),
        );
        const forced = findCutPoint(messages, { keepRecentTokens, force: true });
        if (messages.length - start > 2 && anyValid) expect(forced).not.toBeNull();
        if (findCutPoint(messages, { keepRecentTokens }) === null && forced !== null) {
          expect(forced.kind).toBe('forced');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('planCompaction properties', () => {
  it('history, turn prefix and kept part are consecutive slices; the kept part never starts with an orphan', () => {
    fc.assert(
      fc.property(viewArb, optionsArb, (input, options) => {
        const messages = buildView(input);
        const policy = policyOf(options);
        const plan = planCompaction(messages, {
          keepRecentTokens: options.keepRecentTokens,
          force: options.force,
          policy,
        });
        if (plan === null) return;
        expect([...plan.history, ...(plan.turnPrefix ?? []), ...plan.kept]).toEqual(messages);
        expect(plan.kept.length).toBeGreaterThan(0);
        expect(plan.boundarySeq).toBe(plan.kept[0]!.seq);
        expect(separatesCallFromResult(messages, plan.cutIndex)).toBe(false);
        const startsWithTurn = isTurnStart(plan.kept[0]!);
        expect(startsWithTurn).toBe(plan.split === 'clean' || plan.split === 'moved-to-turn-start');
        if (plan.turnPrefix !== null) {
          expect(plan.split).toBe('split');
          expect(isTurnStart(plan.turnPrefix[0]!)).toBe(true);
          expect(plan.turnPrefix.length).toBeGreaterThanOrEqual(policy.splitTurnMinPrefix);
        }
        // Something new is compacted: not just the previous summary.
        const compactsNew = plan.history.some((message) => !message.summary) || plan.turnPrefix !== null;
        expect(compactsNew).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
