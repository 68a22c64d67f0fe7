import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, ToolPart } from './model';
import { DEFAULT_POLICY, type PruneBudgets, type PruningPolicy } from './policy';
import { pruneCouldSelect, selectPrunableParts, type UnprunedOutputs } from './prune';
import { assistant, conversation, summary, toolPart, user } from './test-support/builders';

const OPENCODE: PruningPolicy = DEFAULT_POLICY.pruning; // 40,000 / 20,000 / ['skill'] / 2 turns
const PRUNED_AT = '2025-01-01T00:00:00.000Z';

/** A user turn whose assistant answer ran the given tool outputs (tokens), oldest first. */
function turn(...outputs: number[]): Message[] {
  return [user('do it', 10), assistant(outputs.map((tokens) => toolPart('read', tokens)))];
}

/** History of `count` turns with one `tokens`-token output each, then two recent turns. */
function history(
  count: number,
  tokens: number,
  recent: Message[][] = [turn(50_000), turn(50_000)],
): Message[] {
  return conversation([...Array.from({ length: count }, () => turn(tokens)).flat(), ...recent.flat()]);
}

const selectedSeqs = (messages: Message[], pruning = OPENCODE): number[] =>
  selectPrunableParts(messages, pruning).parts.map((part) => part.seq);

describe('selectPrunableParts: OpenCode semantics', () => {
  it('protects the newest 40,000 output tokens and prunes the rest when above 20,000', () => {
    // Ten old outputs of 10,000: the newest four (40,000) stay, the six older are pruned.
    const messages = history(10, 10_000);
    const selection = selectPrunableParts(messages, OPENCODE);
    expect(selection.parts.map((part) => part.seq)).toEqual([2, 4, 6, 8, 10, 12]);
    expect(selection.prunedTokens).toBe(60_000);
    expect(selection.candidateTokens).toBe(60_000);
    expect(selection.scannedTokens).toBe(100_000);
  });

  it.each([
    ['15,000 over the protection is not worth it', Array<number>(11).fill(5000), 0, 15_000],
    ['exactly 20,000 over is not more than the minimum', Array<number>(12).fill(5000), 0, 20_000],
    ['20,001 over is', [20_001, 40_000], 20_001, 20_001],
    ['the output that crosses 40,000 is pruned whole', [60_001], 60_001, 60_001],
  ])('%s', (_name, outputs, pruned, candidates) => {
    const messages = conversation([...outputs.flatMap((tokens) => turn(tokens)), ...turn(1), ...turn(1)]);
    const selection = selectPrunableParts(messages, OPENCODE);
    expect(selection.prunedTokens).toBe(pruned);
    expect(selection.candidateTokens).toBe(candidates);
    expect(selection.parts.length > 0).toBe(pruned > 0);
  });

  it('never touches the last 2 user turns, however large', () => {
    const messages = conversation([...turn(1000), ...turn(500_000, 500_000), ...turn(500_000)]);
    expect(selectPrunableParts(messages, OPENCODE).parts).toEqual([]);
  });

  it('counts turns by user messages: a single long turn is all protected', () => {
    const messages = conversation([
      user('go', 10),
      ...Array.from({ length: 20 }, () => assistant([toolPart('read', 30_000)])),
    ]);
    expect(selectPrunableParts(messages, OPENCODE).scannedTokens).toBe(0);
  });

  it('skips protected tools: never pruned, not counted toward the protection', () => {
    const messages = conversation([
      user('a', 10),
      assistant([toolPart('read', 30_000), toolPart('skill', 90_000)]),
      user('b', 10),
      assistant([toolPart('read', 40_000)]),
      ...turn(1),
      ...turn(1),
    ]);
    const selection = selectPrunableParts(messages, OPENCODE);
    expect(selection.parts).toEqual([
      { messageId: 'm2', seq: 2, callId: 'call_2_0', tool: 'read', outputTokens: 30_000 },
    ]);
    expect(selection.scannedTokens).toBe(70_000);
  });

  it('stops at the previous summary', () => {
    const messages = conversation([
      ...turn(100_000),
      summary('earlier work', 500),
      ...turn(30_000),
      ...turn(45_000),
      ...turn(1),
      ...turn(1),
    ]);
    // 45,000 crosses the protection and 30,000 follows; the 100,000 before the summary is out of reach.
    expect(selectedSeqs(messages)).toEqual([5, 7]);
  });

  it('stops at an output pruned before: older ones were handled then', () => {
    const messages = conversation([
      ...turn(80_000),
      user('b', 10),
      assistant([toolPart('read', 70_000, { compactedAt: PRUNED_AT })]),
      ...turn(35_000),
      ...turn(1),
      ...turn(1),
    ]);
    const selection = selectPrunableParts(messages, OPENCODE);
    expect(selection.parts).toEqual([]);
    expect(selection.scannedTokens).toBe(35_000);
  });

  it('only completed tool parts count; errors and running calls are passed over', () => {
    const messages = conversation([
      user('a', 10),
      assistant([toolPart('bash', 0, { status: 'error', tokens: 90_000 }), toolPart('read', 25_000)]),
      user('b', 10),
      assistant([toolPart('bash', 0, { status: 'running', tokens: 90_000 }), toolPart('read', 40_000)]),
      ...turn(1),
      ...turn(1),
    ]);
    expect(selectPrunableParts(messages, OPENCODE)).toMatchObject({
      prunedTokens: 25_000,
      scannedTokens: 65_000,
    });
  });

  it('uses the stored output tokens, never the output text', () => {
    const part: ToolPart = { ...toolPart('read', 50_000), output: 'tiny' };
    const messages = conversation([
      user('a', 10),
      assistant([part]),
      user('b', 10),
      assistant([toolPart('read', 40_000)]),
      ...turn(1),
      ...turn(1),
    ]);
    expect(selectPrunableParts(messages, OPENCODE).prunedTokens).toBe(50_000);
  });

  it('walks the parts of a message newest first', () => {
    const messages = conversation([
      user('a', 10),
      assistant([toolPart('read', 25_000), toolPart('grep', 39_000)]),
      ...turn(1),
      ...turn(1),
    ]);
    expect(selectPrunableParts(messages, OPENCODE).parts.map((part) => part.tool)).toEqual(['read']);
  });

  it('follows the budgets it is given', () => {
    const messages = history(3, 1000, [turn(500), turn(700)]);
    expect(selectedSeqs(messages, { ...OPENCODE, protectTokens: 0, minimumTokens: 0 })).toEqual([2, 4, 6]);
    expect(
      selectedSeqs(messages, { ...OPENCODE, protectTokens: 0, minimumTokens: 0, protectUserTurns: 0 }),
    ).toEqual([2, 4, 6, 8, 10]);
    expect(
      selectedSeqs(messages, { ...OPENCODE, protectTokens: 0, minimumTokens: 0, protectedTools: ['read'] }),
    ).toEqual([]);
  });

  it('an empty view selects nothing', () => {
    expect(selectPrunableParts([], OPENCODE)).toEqual({
      parts: [],
      prunedTokens: 0,
      candidateTokens: 0,
      scannedTokens: 0,
    });
  });
});

// ── Properties over random sessions ───────────────────────────────────────────────────────────

const toolArb = fc.record({
  tool: fc.constantFrom('read', 'bash', 'grep', 'skill'),
  status: fc.constantFrom('completed', 'completed', 'completed', 'error', 'running'),
  outputTokens: fc.integer({ min: 0, max: 30_000 }),
  pruned: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
});
const turnArb = fc.array(fc.array(toolArb, { maxLength: 3 }), { minLength: 0, maxLength: 4 });
const sessionArb = fc.record({
  leadingSummary: fc.boolean(),
  turns: fc.array(turnArb, { minLength: 0, maxLength: 12 }),
});
const budgetArb = fc.record({
  protectTokens: fc.constantFrom(0, 10_000, 40_000),
  minimumTokens: fc.constantFrom(0, 5000, 20_000),
  protectedTools: fc.constantFrom<string[]>(['skill'], ['skill', 'grep'], []),
  protectUserTurns: fc.integer({ min: 0, max: 3 }),
});

type SessionInput = typeof sessionArb extends fc.Arbitrary<infer T> ? T : never;

function buildSession(input: SessionInput): Message[] {
  const messages: Message[] = input.leadingSummary ? [summary('before', 300)] : [];
  for (const assistantMessages of input.turns) {
    messages.push(user('ask', 20));
    for (const parts of assistantMessages) {
      messages.push(
        assistant(
          parts.map((part) =>
            toolPart(part.tool, part.outputTokens, {
              status: part.status as ToolPart['status'],
              compactedAt: part.pruned && part.status === 'completed' ? PRUNED_AT : null,
            }),
          ),
        ),
      );
    }
  }
  return conversation(messages);
}

/** Index of the first message inside the protected user turns (messages.length when none are). */
function protectedFrom(messages: Message[], turns: number): number {
  let seen = 0;
  for (let index = messages.length - 1; index >= 0; index--) {
    if (messages[index]!.role === 'user' && ++seen === turns) return index + 1;
  }
  return turns === 0 ? messages.length : 0;
}

describe('selectPrunableParts properties', () => {
  it('never touches the protected turns or tools; only completed, unpruned outputs; all or nothing above the minimum', () => {
    fc.assert(
      fc.property(sessionArb, budgetArb, (session, budgets) => {
        const messages = buildSession(session);
        const selection = selectPrunableParts(messages, budgets);
        const bySeq = new Map(messages.map((message, index) => [message.seq, { message, index }]));
        const firstProtected = protectedFrom(messages, budgets.protectUserTurns);
        let total = 0;
        for (const selected of selection.parts) {
          const { message, index } = bySeq.get(selected.seq)!;
          const part = message.parts.find(
            (p) => p.type === 'tool' && p.callId === selected.callId,
          ) as ToolPart;
          expect(index).toBeLessThan(firstProtected);
          expect(budgets.protectedTools).not.toContain(part.tool);
          expect(part.status).toBe('completed');
          expect(part.compactedAt).toBeNull();
          expect(selected.outputTokens).toBe(part.outputTokens);
          total += part.outputTokens;
        }
        expect(selection.prunedTokens).toBe(total);
        if (selection.parts.length > 0) expect(selection.prunedTokens).toBeGreaterThan(budgets.minimumTokens);
        else expect(selection.prunedTokens).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the newest eligible outputs up to the protection, and prunes the one that crosses it', () => {
    fc.assert(
      fc.property(sessionArb, budgetArb, (session, budgets) => {
        const messages = buildSession(session);
        const selection = selectPrunableParts(messages, budgets);
        const newest = selection.parts.at(-1);
        if (newest === undefined) return;
        // Eligible outputs outside the protected turns, oldest first.
        const eligible = messages
          .slice(0, protectedFrom(messages, budgets.protectUserTurns))
          .flatMap((message) => message.parts)
          .filter((part): part is ToolPart => part.type === 'tool' && part.status === 'completed')
          .filter((part) => !budgets.protectedTools.includes(part.tool));
        const position = eligible.findIndex((part) => part.callId === newest.callId);
        const keptNewer = eligible.slice(position + 1);
        expect(keptNewer.every((part) => part.compactedAt === null)).toBe(true);
        const keptTokens = keptNewer.reduce((sum, part) => sum + part.outputTokens, 0);
        expect(keptTokens).toBeLessThanOrEqual(budgets.protectTokens);
        expect(keptTokens + newest.outputTokens).toBeGreaterThan(budgets.protectTokens);
      }),
      { numRuns: 300 },
    );
  });
});

/** What db's context stats report for a view: its completed, unpruned tool outputs. */
function unprunedOutputs(messages: Message[]): UnprunedOutputs {
  const outputs = messages
    .flatMap((message) => message.parts)
    .filter((part): part is ToolPart => part.type === 'tool' && part.status === 'completed')
    .filter((part) => part.compactedAt === null)
    .map((part) => part.outputTokens);
  return { total: outputs.reduce((sum, tokens) => sum + tokens, 0), largest: Math.max(0, ...outputs) };
}

/** A policy measuring outputs by their stored counts (every preset's default). */
const withStoredCounts = (pruning: PruneBudgets) => ({ pruning, tokenCount: 'tokenizer' as const });

describe('pruneCouldSelect: a prune worth queueing, decided from two sums', () => {
  it('always says yes under the chars measure, which the stored sums do not bound', () => {
    expect(pruneCouldSelect({ pruning: OPENCODE, tokenCount: 'chars' }, { total: 0, largest: 0 })).toBe(true);
  });

  it.each([
    // OpenCode's budgets: protect 40,000, prune only above 20,000.
    ['nothing to prune', { total: 0, largest: 0 }, false],
    [
      'a 32k window never holds enough (30,000 + 30,000 = protect + minimum)',
      { total: 30_000, largest: 30_000 },
      false,
    ],
    ['59,000 in outputs of 1,000 save at most 20,000, not more', { total: 59_000, largest: 1_000 }, false],
    ['60,000 with a largest of 1,001 could save 20,001', { total: 60_000, largest: 1_001 }, true],
    ['one output crossing the protection is pruned whole', { total: 60_001, largest: 60_001 }, true],
    ['a large output still needs more than the minimum in total', { total: 20_000, largest: 20_000 }, false],
  ])('%s', (_name, outputs, could) => {
    expect(pruneCouldSelect(withStoredCounts(OPENCODE), outputs)).toBe(could);
  });

  it('the table rows as views: where it says no, selectPrunableParts selects nothing', () => {
    // 59 outputs of 1,000 then the two protected turns' small ones: 20,000 - 1,000 over the protection.
    const small = conversation([
      ...Array.from({ length: 59 }, () => turn(1000)).flat(),
      ...turn(0),
      ...turn(0),
    ]);
    expect(pruneCouldSelect(withStoredCounts(OPENCODE), unprunedOutputs(small))).toBe(false);
    expect(selectPrunableParts(small, OPENCODE).parts).toEqual([]);
    const crossing = conversation([...turn(60_001), ...turn(0), ...turn(0)]);
    expect(pruneCouldSelect(withStoredCounts(OPENCODE), unprunedOutputs(crossing))).toBe(true);
    expect(selectPrunableParts(crossing, OPENCODE).prunedTokens).toBe(60_001);
  });

  it('never says no where selectPrunableParts would prune (random sessions and budgets)', () => {
    fc.assert(
      fc.property(sessionArb, budgetArb, (session, budgets) => {
        const messages = buildSession(session);
        if (selectPrunableParts(messages, budgets).parts.length > 0)
          expect(pruneCouldSelect(withStoredCounts(budgets), unprunedOutputs(messages))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });
});
