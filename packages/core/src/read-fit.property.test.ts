/**
 * Property test of the read-time fit: random agent sessions (an optional pinned system message and
 * previous summary, turns of a request, tool steps with outputs of any size, an answer) against
 * random budgets always give a context within the budget by exact counts, that validates natively
 * and as Chat Completions (every call answered), keeps the pinned and summary messages and the
 * newest message, and still holds the goal and the latest request.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateContext } from './context-validation';
import type { FitCounters } from './fit';
import type { Message, Part } from './model';
import { toOpenAIMessages } from './openai-format';
import { fitViewForRead } from './read-fit';
import { assistant, conversation, summary, system, user } from './test-support/builders';
import { estimateTokens, storedTokens } from './tokens';

const count: FitCounters = {
  text: (value) => estimateTokens(value),
  input: (input) => estimateTokens(JSON.stringify(input)),
};

const GOAL = 'Goal: port the ledger to the invoices API. Never touch the production database.';

interface TurnSpec {
  steps: number[][];
  answer: number;
}

const turnSpec: fc.Arbitrary<TurnSpec> = fc.record({
  // Each step: the output sizes (in lines) of its tool calls.
  steps: fc.array(fc.array(fc.nat(400), { minLength: 1, maxLength: 3 }), { maxLength: 3 }),
  answer: fc.nat(60),
});

function toolCall(turn: number, step: number, call: number, lines: number): Part {
  const input = { command: `npm test ledger-${turn}-${step}-${call}` };
  const output = Array.from({ length: lines }, (_, i) => `PASS ledger/case-${i}.test.ts`).join('\n');
  const outputTokens = count.text(output);
  return {
    type: 'tool',
    callId: `call_${turn}_${step}_${call}`,
    tool: 'bash',
    status: 'completed',
    input,
    output,
    error: null,
    compactedAt: null,
    tokens: count.text('bash') + count.input(input) + outputTokens,
    outputTokens,
  };
}

const text = (value: string) => ({ type: 'text' as const, text: value, tokens: count.text(value) });
const request = (turn: number) => `Request ${turn}: port module ${turn}.`;

function session(turns: TurnSpec[], withSystem: boolean, withSummary: boolean): Message[] {
  const messages: Message[] = [];
  if (withSystem) messages.push(system('You are a careful coding agent.'.repeat(4)));
  if (withSummary)
    messages.push(
      summary(
        `Earlier work.\n\n<pinned>\nThe user's own words, kept verbatim across compactions:\n- Goal: ${GOAL}\n</pinned>`,
      ),
    );
  turns.forEach((turn, t) => {
    const first = t === 0 && !withSummary;
    messages.push(user(first ? GOAL : request(t + 1)));
    turn.steps.forEach((calls, s) =>
      messages.push(assistant(calls.map((lines, c) => toolCall(t + 1, s, c, lines)))),
    );
    messages.push(assistant([text(`Module ${t + 1} done. ${'More detail. '.repeat(turn.answer)}`)]));
  });
  // Texts counted as the fit counts them (the builders' estimate rounds the same way, to be sure).
  return conversation(messages).map((message) => ({
    ...message,
    parts: message.parts.map((part) => (part.type === 'text' ? text(part.text) : part)),
  }));
}

describe('fitViewForRead on random agent sessions', () => {
  it('fits the budget, validates, and keeps what must stay', () => {
    const seen = { cleared: 0, clamped: 0, dropped: 0 };
    fc.assert(
      fc.property(
        fc.array(turnSpec, { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 300, max: 6_000 }),
        fc.option(fc.record({ protectTokens: fc.nat(2_000), minimumTokens: fc.nat(2_000) })),
        (turns, withSystem, withSummary, room, pruning) => {
          const view = session(turns, withSystem, withSummary);
          const fixed = storedTokens(view.filter((m) => m.role === 'system' || m.summary));
          const budget = fixed + room;
          const fit = fitViewForRead(view, {
            budgetTokens: budget,
            pruning: pruning && { ...pruning, protectedTools: [], protectUserTurns: 1 },
            pinSystemMessages: true,
            markerBudgetTokens: 400,
            at: '2026-01-01T00:00:00.000Z',
            count,
          });
          expect(fit.tokens).toBe(storedTokens(fit.messages));
          seen.cleared += fit.cleared > 0 ? 1 : 0;
          seen.clamped += fit.clamped > 0 ? 1 : 0;
          seen.dropped += fit.dropped > 0 ? 1 : 0;
          expect(fit.fits).toBe(true);
          expect(fit.tokens).toBeLessThanOrEqual(budget);
          if (storedTokens(view) <= budget) expect(fit.messages).toEqual(view);
          expect(validateContext(fit.messages)).toEqual([]);
          const chat = toOpenAIMessages({
            messages: fit.messages,
            compactionId: null,
            boundarySeq: null,
            tokens: 0,
          });
          expect(validateContext(chat)).toEqual([]);
          // Pinned and summary messages first, unchanged; the newest message is the view's newest.
          const head = view.filter((m) => m.role === 'system' || m.summary);
          expect(fit.messages.slice(0, head.length)).toEqual(head);
          expect(fit.messages.at(-1)!.id).toBe(view.at(-1)!.id);
          const served = JSON.stringify(fit.messages);
          expect(served).toContain(GOAL);
          expect(served).toContain(turns.length === 1 && !withSummary ? GOAL : request(turns.length));
        },
      ),
      { numRuns: 300 },
    );
    // Every step was taken in some of the runs.
    expect(seen.cleared).toBeGreaterThan(0);
    expect(seen.clamped).toBeGreaterThan(0);
    expect(seen.dropped).toBeGreaterThan(0);
  });
});
