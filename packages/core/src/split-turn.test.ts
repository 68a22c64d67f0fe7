import { describe, expect, it } from 'vitest';
import { keepRecentTokensFor } from './cut-point';
import type { Message } from './model';
import { POLICY_PRESETS, resolvePolicy, type Policy } from './policy';
import { planCompaction, type CompactionPlan } from './split-turn';
import {
  assistant,
  conversation,
  messages,
  model,
  summary,
  system,
  text,
  toolPart,
  user,
} from './test-support/builders';
import { INTERRUPTED_TOOL_RESULT_TOKENS } from './tokens';

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

/**
 * An old turn, then a turn whose prefix (its user message and `prefixLength − 1` assistant
 * messages of `prefixTokens`) is followed by 3 assistant messages of 1000 tokens.
 */
function longTurn(prefixLength: number, prefixTokens = 1000): Message[] {
  // seq 1–2: an old turn; seq 3: the long turn's user message; then its assistant messages.
  return messages(`uau${'a'.repeat(prefixLength - 1 + 3)}`, [
    100,
    100,
    100,
    ...Array<number>(prefixLength - 1).fill(prefixTokens),
    ...Array<number>(3).fill(1000),
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
    // Kept after moving back: 100 + 3 × 500 + 3000 = 4600 ≤ 2 × 3000.
    const view = longTurn(4, 500);
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

  it('a short prefix that would keep more than 2 × the budget is summarised with the history', () => {
    // Moving back would keep 100 + 3 × 1000 + 3000 = 6100 > 6000.
    expect(plan(longTurn(4))).toMatchObject({
      cutIndex: 6,
      history: [1, 2, 3, 4, 5, 6],
      turnPrefix: null,
      split: 'prefix-in-history',
    });
  });

  it("Opal's code summarises a short prefix with the history instead", () => {
    const view = longTurn(4);
    // Opal's budget is found once exceeded: 2,999 keeps the last 3 messages (3,000 > 2,999).
    expect(plan(view, POLICY_PRESETS.opal, KEEP_LAST_3 - 1)).toMatchObject({
      cutIndex: 6,
      history: [1, 2, 3, 4, 5, 6],
      turnPrefix: null,
      kept: seqs(view.slice(-3)),
      split: 'prefix-in-history',
    });
  });

  it('the split threshold follows the policy', () => {
    expect(plan(longTurn(4), resolvePolicy({ splitTurnMinPrefix: 4 }))?.split).toBe('split');
    expect(plan(longTurn(7, 100), resolvePolicy({ splitTurnMinPrefix: 8 }))?.split).toBe(
      'moved-to-turn-start',
    );
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
    expect(plan(messages('sua', 100), POLICY_PRESETS.opencode, 20_000, true)).toBeNull();
    expect(plan(messages('uaua', 100), POLICY_PRESETS.opencode, 20_000)).toBeNull();
    expect(plan([], POLICY_PRESETS.opencode, 0)).toBeNull();
  });
});

describe('compactions that would leave the context as full as they found it (REFERENCE: re-fires)', () => {
  const gpt4o = model(128_000, 16_384); // usable 111,616
  const emergencyKeep = keepRecentTokensFor('overflow', gpt4o, POLICY_PRESETS.opencode); // 25,600
  const autoKeep = keepRecentTokensFor('auto', gpt4o, POLICY_PRESETS.opencode); // 32,000
  const plan126k = (force: boolean) =>
    planCompaction(messages('uauaaaa', [950, 5000, 50, 90_000, 10_000, 10_000, 10_000]), {
      keepRecentTokens: emergencyKeep,
      force,
      policy: POLICY_PRESETS.opencode,
    });

  it('an overflow emergency of 126k never moves back (it kept 120,050 of 126,000 before)', () => {
    const result = plan126k(true);
    expect(shape(result)).toMatchObject({ cutIndex: 4, kept: [5, 6, 7], split: 'prefix-in-history' });
    expect(result?.keptTokens).toBe(30_000);
    // The same cut without force may not move back either: 120,050 > 2 × 25,600.
    expect(plan126k(false)?.split).toBe('prefix-in-history');
  });

  it('an auto compaction of 118k keeps 51k, not 112k', () => {
    const view = messages('uauaaaaaa', [1000, 5000, 1000, 30_000, 30_000, 20_000, 11_000, 10_000, 10_000]);
    const result = planCompaction(view, { keepRecentTokens: autoKeep, policy: POLICY_PRESETS.opencode });
    expect(shape(result)).toMatchObject({
      cutIndex: 5,
      history: [1, 2, 3, 4, 5],
      split: 'prefix-in-history',
    });
    expect(result?.keptTokens).toBe(51_000);
  });

  it('a giant message at the budget point is summarised rather than kept', () => {
    // From the end 10k, 20k, 31k, then the 80k output: 111k ≥ 32k at it. Keeping it would keep 111k.
    const view = messages('uauaaaa', [1000, 5000, 1000, 80_000, 11_000, 10_000, 10_000]);
    const result = planCompaction(view, { keepRecentTokens: autoKeep, policy: POLICY_PRESETS.opencode });
    expect(shape(result)).toMatchObject({ cutIndex: 4, kept: [5, 6, 7], split: 'prefix-in-history' });
    expect(result?.keptTokens).toBe(31_000);
  });

  describe('a call still running in the current turn (its result may land while the summary is written)', () => {
    const running = (status: 'running' | 'completed') =>
      conversation([
        user('fix the build', 500),
        assistant('looking', { tokens: 20_000 }),
        user('now run the tests', 300),
        assistant([text('running them', 100), toolPart('bash', 10, { tokens: 30, status })]),
        assistant('while they run, reading the config', { tokens: 20_000 }),
        assistant('and the other config', { tokens: 20_000 }),
      ]);
    // A short prefix summarised with the history (Opal's rule), so the cut stays where it lands.
    const policy = resolvePolicy({ preset: 'opencode', splitTurnShortPrefix: 'summarize' });
    const options = { keepRecentTokens: 25_000, policy };

    it('a finished call may be compacted', () => {
      expect(shape(planCompaction(running('completed'), options))).toMatchObject({ kept: [5, 6] });
    });

    it('the cut moves back to the message holding the running call', () => {
      const result = planCompaction(running('running'), options);
      expect(shape(result)).toMatchObject({ kept: [4, 5, 6], history: [1, 2, 3] });
      expect(result?.keptTokens).toBe(40_130 + INTERRUPTED_TOOL_RESULT_TOKENS);
    });

    it('an emergency too', () => {
      expect(shape(planCompaction(running('running'), { ...options, force: true }))).toMatchObject({
        kept: [4, 5, 6],
      });
    });

    it('a running call of an earlier turn does not hold the cut (that turn was abandoned)', () => {
      const view = conversation([
        user('first', 500),
        assistant([toolPart('bash', 10, { tokens: 30, status: 'running' })]),
        user('never mind, do this instead', 20_000),
        assistant('done', { tokens: 20_000 }),
        assistant('and this', { tokens: 20_000 }),
      ]);
      expect(shape(planCompaction(view, options))).toMatchObject({ kept: [4, 5] });
    });

    it('nothing to compact when the running call follows the previous summary at once', () => {
      const view = conversation([
        summary('earlier work', 800),
        assistant([toolPart('bash', 10, { tokens: 30, status: 'running' })]),
        assistant('more', { tokens: 30_000 }),
        assistant('more', { tokens: 30_000 }),
      ]);
      expect(planCompaction(view, { ...options, force: true })).toBeNull();
    });
  });
});

describe('pinned system messages (REFERENCE: instructions missing after compaction)', () => {
  const prompt = (tokens: number, extras: Partial<Message> = {}): Message =>
    system('You are a careful engineer. Follow AGENTS.md.', tokens, extras);
  // seq 1: the system prompt; then three turns of 5000 + 5000.
  const view = conversation([
    prompt(3000),
    ...messages('uauaua', 5000).map((m) => ({ ...m, seq: 0, id: '' })),
  ]);

  it('are never compacted nor counted by the keep budget', () => {
    const result = planCompaction(view, { keepRecentTokens: 12_000, policy: POLICY_PRESETS.opencode });
    expect(shape(result)).toMatchObject({ history: [2, 3, 4, 5], kept: [6, 7], boundarySeq: 6, cutIndex: 5 });
    expect(seqs(result?.pinned ?? null)).toEqual([1]);
    expect(result?.keptTokens).toBe(10_000);
  });

  it('wherever they are in the view', () => {
    const middle = conversation(
      [...messages('uaua', 5000), prompt(3000), ...messages('ua', 5000)].map((m) => ({
        ...m,
        seq: 0,
        id: '',
      })),
    );
    const result = planCompaction(middle, { keepRecentTokens: 9000, policy: POLICY_PRESETS.opencode });
    expect(shape(result)).toMatchObject({ history: [1, 2, 3, 4], kept: [6, 7], cutIndex: 5 });
    expect(seqs(result?.pinned ?? null)).toEqual([5]);
  });

  it('pinSystemMessages: false compacts them like any message', () => {
    const result = planCompaction(view, {
      keepRecentTokens: 12_000,
      policy: resolvePolicy({ pinSystemMessages: false }),
    });
    expect(shape(result)).toMatchObject({ history: [1, 2, 3, 4, 5], kept: [6, 7] });
    expect(result?.pinned).toEqual([]);
  });

  it("a compaction's own system-style summary is not pinned: it is merged into the next one", () => {
    const previous = [
      prompt(3000, { seq: 1, id: 'sys' }),
      prompt(400, { seq: 50, id: 'sum', summary: true }),
    ];
    const turns = messages('uaua', 5000).map((m) => ({ ...m, seq: m.seq + 9, id: `k${m.seq}` }));
    const result = planCompaction([...previous, ...turns], {
      keepRecentTokens: 9000,
      policy: resolvePolicy({ summaryMessage: 'system' }),
    });
    expect(seqs(result?.history ?? null)).toEqual([50, 10, 11]);
    expect(seqs(result?.pinned ?? null)).toEqual([1]);
  });
});
