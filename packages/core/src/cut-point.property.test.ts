import fc from 'fast-check';
import { countLeadingSummaryMessages } from './summary-messages';
import { describe, expect, it } from 'vitest';
import { isPinnedMessage } from './context';
import { findCutPoint, isTurnStart } from './cut-point';
import type { Message, Part } from './model';
import { resolvePolicy } from './policy';
import { MOVE_BACK_MAX_KEPT_FACTOR, planCompaction } from './split-turn';
import { assistant, conversation, summary, system, text, toolPart, user } from './test-support/builders';
import { storedTokens } from './tokens';

// Random views: optional previous summaries, a turn that began before them, then user turns of
// assistant messages with tool calls (each tool part carries its call and its result: model.ts
// ToolPart), sometimes with a system message the client stored (pinned by default).
const assistantArb = fc.record({
  tokens: fc.integer({ min: 0, max: 8000 }),
  tools: fc.integer({ min: 0, max: 2 }),
  outputTokens: fc.constantFrom(10, 1000, 30_000),
  /** Its first call still running (a streamed turn whose result has not arrived). */
  running: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
});
const turnArb = fc.record({
  userTokens: fc.integer({ min: 0, max: 4000 }),
  system: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  assistants: fc.array(assistantArb, { maxLength: 7 }),
});
const viewArb = fc.record({
  summaries: fc.integer({ min: 0, max: 2 }),
  pinnedFirst: fc.boolean(),
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
  pinSystemMessages: fc.boolean(),
});

type ViewInput = typeof viewArb extends fc.Arbitrary<infer T> ? T : never;
type AssistantInput = ViewInput['headAssistants'][number];

function buildView(input: ViewInput): Message[] {
  const messages: Message[] = [];
  // A pinned system message hidden by the previous boundary comes first (context.ts).
  if (input.pinnedFirst) messages.push(system('You are a careful engineer.', 700));
  for (let i = 0; i < input.summaries; i++)
    messages.push(summary(`summary ${i}`, 300, { seq: 1000 + i, id: `s${i}` }));
  const addAssistant = (spec: AssistantInput): void => {
    const parts: Part[] = [text('thinking', spec.tokens)];
    for (let call = 0; call < spec.tools; call++)
      parts.push(
        toolPart('read', spec.outputTokens, { status: spec.running && call === 0 ? 'running' : 'completed' }),
      );
    messages.push(assistant(parts));
  };
  input.headAssistants.forEach(addAssistant);
  for (const turn of input.turns) {
    if (turn.system) messages.push(system('Plan mode is on.', 900));
    messages.push(user('ask', turn.userTokens));
    turn.assistants.forEach(addAssistant);
  }
  return conversation(messages);
}

const policyOf = (options: typeof optionsArb extends fc.Arbitrary<infer T> ? T : never) =>
  resolvePolicy({
    cutAt: options.cutAt,
    splitTurnMinPrefix: options.splitTurnMinPrefix,
    splitTurnShortPrefix: options.splitTurnShortPrefix,
    strategy: options.topic ? 'topic' : 'summarize',
    topic: { minVerbatimExchanges: options.minVerbatimExchanges },
    pinSystemMessages: options.pinSystemMessages,
  });

describe('findCutPoint properties', () => {
  it('always compacts something new and keeps something; kinds say what they mean', () => {
    fc.assert(
      fc.property(viewArb, optionsArb, (input, options) => {
        const messages = buildView({ ...input, pinnedFirst: false });
        const point = findCutPoint(messages, {
          ...options,
          minKeptUserTurns: options.topic ? options.minVerbatimExchanges : 0,
        });
        if (point === null) return;
        expect(point.index).toBeGreaterThan(countLeadingSummaryMessages(messages));
        expect(point.index).toBeLessThan(messages.length);
        expect(point.keptTokens).toBe(storedTokens(messages.slice(point.index)));
        if (point.kind === 'turn-start') expect(isTurnStart(messages[point.index]!)).toBe(true);
        if (point.kind === 'forced') expect(options.force).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('force always frees room when more than 2 messages follow the summary', () => {
    fc.assert(
      fc.property(viewArb, fc.integer({ min: 0, max: 40_000 }), (input, keepRecentTokens) => {
        const messages = buildView({ ...input, pinnedFirst: false });
        const start = countLeadingSummaryMessages(messages);
        const forced = findCutPoint(messages, { keepRecentTokens, force: true });
        if (messages.length - start > 2) expect(forced).not.toBeNull();
        if (findCutPoint(messages, { keepRecentTokens }) === null && forced !== null) {
          expect(forced.kind).toBe('forced');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('planCompaction properties', () => {
  it('history, turn prefix and kept part are consecutive slices of the unpinned view; pinned messages are in none', () => {
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
        const pinned = messages.filter((m) => options.pinSystemMessages && isPinnedMessage(m));
        expect(plan.pinned).toEqual(pinned);
        expect([...plan.history, ...(plan.turnPrefix ?? []), ...plan.kept]).toEqual(
          messages.filter((m) => !pinned.includes(m)),
        );
        expect(plan.kept.length).toBeGreaterThan(0);
        expect(plan.boundarySeq).toBe(plan.kept[0]!.seq);
        expect(messages[plan.cutIndex]).toBe(plan.kept[0]);
        expect(plan.keptTokens).toBe(storedTokens(plan.kept));
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

  it('moving a short prefix back never happens in an emergency nor keeps more than 2 × the budget', () => {
    fc.assert(
      fc.property(viewArb, optionsArb, (input, options) => {
        const plan = planCompaction(buildView(input), {
          keepRecentTokens: options.keepRecentTokens,
          force: options.force,
          policy: policyOf(options),
        });
        if (plan?.split !== 'moved-to-turn-start') return;
        expect(options.force).toBe(false);
        expect(plan.keptTokens).toBeLessThanOrEqual(MOVE_BACK_MAX_KEPT_FACTOR * options.keepRecentTokens);
      }),
      { numRuns: 500 },
    );
  });

  it('a plan never compacts a call still running in the current turn', () => {
    fc.assert(
      fc.property(viewArb, optionsArb, (input, options) => {
        const view = buildView(input);
        const plan = planCompaction(view, {
          keepRecentTokens: options.keepRecentTokens,
          force: options.force,
          policy: policyOf(options),
        });
        if (plan === null) return;
        const newestTurn = view.findLastIndex((m) => m.role === 'user' && !m.summary);
        const compacted = [...plan.history, ...(plan.turnPrefix ?? [])];
        const running = (m: (typeof view)[number]) =>
          m.parts.some((p) => p.type === 'tool' && (p.status === 'running' || p.status === 'pending'));
        const currentTurnSeq = newestTurn === -1 ? -Infinity : view[newestTurn]!.seq;
        expect(compacted.filter((m) => m.seq >= currentTurnSeq && running(m))).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });
});
