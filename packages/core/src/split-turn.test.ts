import { describe, expect, it } from 'vitest';
import type { Message } from './model';
import { POLICY_PRESETS, resolvePolicy, type Policy } from './policy';
import { planCompaction, type CompactionPlan } from './split-turn';
import { assistant, conversation, summary, user } from './test-support/builders';

/** Messages of the given roles and tokens: `u` user, `a` assistant, `s` summary. */
function messages(spec: string, tokens: number | number[]): Message[] {
  return conversation(
    [...spec].map((role, index) => {
      const count = Array.isArray(tokens) ? tokens[index]! : tokens;
      if (role === 'u') return user(`u${index}`, count);
      if (role === 's') return summary(`s${index}`, count);
      return assistant(`a${index}`, { tokens: count });
    }),
  );
}

const seqs = (list: Message[] | null): number[] | null => list?.map((message) => message.seq) ?? null;

function shape(plan: CompactionPlan | null) {
  return (
    plan && {
      cutIndex: plan.cutIndex,
      boundarySeq: plan.boundarySeq,
      history: seqs(plan.history),
      turnPrefix: seqs(plan.turnPrefix),
      kept: seqs(plan.kept),
      cut: plan.cut,
      split: plan.split,
    }
  );
}

/** Two small turns, then a turn of `prefixLength + 3` assistant messages of 1000 tokens. */
function longTurn(prefixLength: number): Message[] {
  // seq 1–2: an old turn; seq 3: the long turn's user message; then its assistant messages.
  return messages(`uau${'a'.repeat(prefixLength - 1 + 3)}`, [
    100,
    100,
    100,
    ...Array<number>(prefixLength - 1 + 3).fill(1000),
  ]);
}
// Keeping 3000 tokens cuts before the last 3 assistant messages: the prefix is
// the user message plus `prefixLength - 1` assistant messages.
const KEEP_LAST_3 = 3000;

const plan = (
  view: Message[],
  policy: Policy = POLICY_PRESETS.opencode,
  keepRecentTokens = KEEP_LAST_3,
  force = false,
) => shape(planCompaction(view, { keepRecentTokens, force, policy }));

describe('planCompaction', () => {
  it('a clean cut at a user message: one history summary', () => {
    expect(plan(messages('uauaua', 5000), POLICY_PRESETS.opencode, 12_000)).toEqual({
      cutIndex: 4,
      boundarySeq: 5,
      history: [1, 2, 3, 4],
      turnPrefix: null,
      kept: [5, 6],
      cut: 'turn-start',
      split: 'clean',
    });
  });

  it.each([
    ['a prefix of 7 messages', 7],
    ['a prefix of exactly 5 (Opal: >= 5)', 5],
  ])('%s splits: history summary + turn-prefix summary', (_name, prefixLength) => {
    const view = longTurn(prefixLength);
    const result = plan(view);
    expect(result).toMatchObject({
      split: 'split',
      cut: 'mid-turn',
      history: [1, 2],
      kept: seqs(view.slice(-3)),
    });
    expect(result?.turnPrefix).toHaveLength(prefixLength);
    expect(result?.turnPrefix?.[0]).toBe(3);
  });

  it('a prefix of 4 moves the cut back to the turn start (prefix kept verbatim)', () => {
    const view = longTurn(4);
    expect(plan(view)).toEqual({
      cutIndex: 2,
      boundarySeq: 3,
      history: [1, 2],
      turnPrefix: null,
      kept: seqs(view.slice(2)),
      cut: 'turn-start',
      split: 'moved-to-turn-start',
    });
  });

  it("Opal's code summarises a short prefix with the history instead", () => {
    const view = longTurn(4);
    expect(plan(view, POLICY_PRESETS.opal)).toMatchObject({
      cutIndex: 6,
      history: [1, 2, 3, 4, 5, 6],
      turnPrefix: null,
      kept: seqs(view.slice(-3)),
      split: 'prefix-in-history',
    });
  });

  it('the split threshold follows the policy', () => {
    expect(plan(longTurn(4), resolvePolicy({ splitTurnMinPrefix: 4 }))?.split).toBe('split');
    expect(plan(longTurn(7), resolvePolicy({ splitTurnMinPrefix: 8 }))?.split).toBe('moved-to-turn-start');
  });

  it('klaude-code: cut at the message, split whatever the prefix', () => {
    // From the end 5000, 10,000, 15,000 ≥ 12,000: klaude cuts at index 3 (an assistant message).
    expect(plan(messages('uauaua', 5000), POLICY_PRESETS.klaude, 12_000)).toEqual({
      cutIndex: 3,
      boundarySeq: 4,
      history: [1, 2],
      turnPrefix: [3],
      kept: [4, 5, 6],
      cut: 'mid-turn',
      split: 'split',
    });
  });

  it('a short prefix in the first turn cannot move back (nothing left to compact): summarised with the history', () => {
    expect(plan(messages('uaaaaa', 1000))).toMatchObject({
      cutIndex: 3,
      history: [1, 2, 3],
      turnPrefix: null,
      split: 'prefix-in-history',
    });
  });

  it('a turn that began before the previous compaction has no prefix to split off', () => {
    const view = [
      summary('before', 500, { seq: 20, id: 's' }),
      ...conversation(
        [
          assistant('a', { tokens: 1000 }),
          assistant('b', { tokens: 1000 }),
          assistant('c', { tokens: 1000 }),
        ],
        10,
      ),
    ];
    expect(plan(view, POLICY_PRESETS.opencode, 1500)).toEqual({
      cutIndex: 2,
      boundarySeq: 11,
      history: [20, 10],
      turnPrefix: null,
      kept: [11, 12],
      cut: 'mid-turn',
      split: 'prefix-in-history',
    });
  });

  it('the previous summary leads the history (merge, not re-summarise) and the boundary is a seq', () => {
    const turns = [
      user('q1', 5000),
      assistant('a1', { tokens: 5000 }),
      user('q2', 5000),
      assistant('a2', { tokens: 5000 }),
    ];
    const view = [summary('before', 500, { seq: 30, id: 's' }), ...conversation(turns, 21)];
    expect(plan(view, POLICY_PRESETS.opencode, 9000)).toMatchObject({
      cutIndex: 3,
      boundarySeq: 23,
      history: [30, 21, 22],
      kept: [23, 24],
    });
  });

  it('an emergency cut never moves back to the turn start', () => {
    // Everything fits 100,000: force keeps the last 2 messages, mid-turn with a 3-message prefix.
    expect(plan(messages('uauaaa', 100), POLICY_PRESETS.opencode, 100_000, true)).toMatchObject({
      cutIndex: 4,
      history: [1, 2, 3, 4],
      turnPrefix: null,
      kept: [5, 6],
      cut: 'forced',
      split: 'prefix-in-history',
    });
  });

  it('an emergency cut at a user message is clean', () => {
    expect(plan(messages('uaua', 100), POLICY_PRESETS.opencode, 100_000, true)).toMatchObject({
      cutIndex: 2,
      cut: 'forced',
      split: 'clean',
    });
  });

  it('topic mode keeps the minimum exchanges', () => {
    const view = messages('uauaua', [10, 10, 10, 50_000, 10, 10]);
    expect(plan(view, POLICY_PRESETS.topic, 15)).toMatchObject({
      cutIndex: 2,
      kept: [3, 4, 5, 6],
      split: 'clean',
    });
    expect(plan(view, POLICY_PRESETS.opencode, 15)).toMatchObject({ cutIndex: 4, kept: [5, 6] });
  });

  it('null when there is nothing to compact', () => {
    expect(plan(messages('uaua', 100), POLICY_PRESETS.opencode, 20_000)).toBeNull();
    expect(plan([], POLICY_PRESETS.opencode, 0)).toBeNull();
  });
});
