import { describe, expect, it } from 'vitest';
import type { Message } from './model';
import { PolicyError, resolvePolicy, type PolicyInput } from './policy';
import {
  draftKeepRecentTokens,
  preparedDraftUsable,
  prepareHeadroomTokens,
  prepareThresholdTokens,
  shouldPrepare,
  type DraftUseFacts,
  type PreparedDraftFacts,
} from './prepare';
import { assistant, conversation, model, summary, system, user } from './test-support/builders';
import { evaluateTrigger } from './triggers';

// A 10,000-token window with a ratio trigger at 0.5: the trigger's point is 5,000 tokens; at
// `atRatio` 0.6 the soft threshold is 3,000.
const window = model(10_000, 2_000);
const prepared = (extra: PolicyInput = {}) =>
  resolvePolicy({ trigger: { kind: 'ratio', ratio: 0.5 }, prepare: { atRatio: 0.6 }, ...extra });

/** The trigger's verdict on a conversation of user/assistant messages of these sizes. */
function triggerOn(sizes: number[], policy = prepared(), extra: Message[] = []) {
  const messages = conversation([
    ...extra,
    ...sizes.map((tokens, i) => (i % 2 === 0 ? user(`u${i}`, tokens) : assistant(`a${i}`, { tokens }))),
  ]);
  const verdict = evaluateTrigger({ messages, model: window, policy, pinSystemMessages: true });
  const pinnedTokens = extra.filter((m) => m.role === 'system').reduce((s, m) => s + m.parts[0]!.tokens, 0);
  return { verdict, pinnedTokens, policy };
}

/** Whether a conversation of user/assistant messages of these sizes asks for a draft. */
function decide(sizes: number[], policy = prepared(), extra: Message[] = []): boolean {
  return shouldPrepare(triggerOn(sizes, policy, extra));
}

describe('policy `prepare`', () => {
  it('is null by default and in every preset, and resolves what a client sends', () => {
    for (const preset of ['default', 'opencode', 'opal', 'klaude', 'topic'] as const)
      expect(resolvePolicy({ preset }).prepare).toBeNull();
    expect(resolvePolicy({ prepare: { atRatio: 0.7 } }).prepare).toEqual({ atRatio: 0.7 });
    expect(resolvePolicy({ prepare: null }).prepare).toBeNull();
  });

  it.each([
    ['0', { atRatio: 0 }],
    ['1', { atRatio: 1 }],
    ['above 1', { atRatio: 1.5 }],
    ['negative', { atRatio: -0.1 }],
    ['not a number', { atRatio: '0.7' }],
    ['infinite', { atRatio: Number.POSITIVE_INFINITY }],
    ['NaN', { atRatio: Number.NaN }],
    ['missing', {}],
    ['an unknown key', { atRatio: 0.7, soon: true }],
    ['not an object', 0.7],
  ])('rejects atRatio %s', (_, prepare) => {
    expect(() => resolvePolicy({ prepare } as unknown as PolicyInput)).toThrow(PolicyError);
  });
});

describe('prepareThresholdTokens', () => {
  it.each([
    [null, 5_000, null],
    [{ atRatio: 0.6 }, 5_000, 3_000],
    [{ atRatio: 0.7 }, 111_616, 78_131.2],
    [{ atRatio: 0.7 }, null, null],
  ])('prepare %j at trigger %j → %j', (prepare, trigger, expected) => {
    expect(prepareThresholdTokens({ prepare }, trigger)).toBe(expected);
  });
});

describe('shouldPrepare: the soft threshold', () => {
  it.each([
    ['below the soft threshold', [1_500, 1_499], false],
    ['at the soft threshold (3,000 = 0.6 × 5,000)', [1_500, 1_500], true],
    ['between the soft threshold and the trigger', [2_000, 2_000], true],
    ['at the trigger (the compaction runs instead)', [2_500, 2_500], false],
  ])('%s', (_, sizes, expected) => {
    expect(decide(sizes)).toBe(expected);
  });

  it('is off without `prepare` (the default and every preset)', () => {
    expect(decide([2_000, 2_000], resolvePolicy({ trigger: { kind: 'ratio', ratio: 0.5 } }))).toBe(false);
    expect(resolvePolicy().prepare).toBeNull();
  });

  it('is off for strategies that call no summarizer, and when auto is off', () => {
    expect(decide([2_000, 2_000], prepared({ strategy: 'truncate' }))).toBe(false);
    expect(decide([2_000, 2_000], prepared({ strategy: 'topic' }))).toBe(false);
    expect(decide([2_000, 2_000], prepared({ auto: false }))).toBe(false);
  });

  it('is off while a compaction is active (the trigger is not evaluated: no verdict)', () => {
    expect(shouldPrepare({ verdict: null, pinnedTokens: 0, policy: prepared() })).toBe(false);
  });

  it('is off right after a compaction (its summary is the newest message)', () => {
    const messages = conversation([user('u', 2_000), summary('the summary', 1_500)]);
    const verdict = evaluateTrigger({ messages, model: window, policy: prepared() });
    expect(verdict.reason).toBe('just-compacted');
    expect(shouldPrepare({ verdict, pinnedTokens: 0, policy: prepared() })).toBe(false);
  });

  it('measures history without pinned system messages for a tokens trigger', () => {
    // Trigger at 4,000 history tokens, soft threshold 2,400; a 1,000-token system prompt.
    const policy = prepared({ trigger: { kind: 'tokens', tokens: 4_000 } });
    const prompt = [system('the rules', 1_000)];
    expect(decide([1_200, 1_199], policy, prompt)).toBe(false);
    expect(decide([1_200, 1_200], policy, prompt)).toBe(true);
  });
});

describe('a draft planned for the trigger’s moment', () => {
  /** The headroom of a conversation of user/assistant messages of these sizes. */
  const headroom = (sizes: number[], policy = prepared(), extra: Message[] = []): number =>
    prepareHeadroomTokens(triggerOn(sizes, policy, extra));

  it.each([
    ['at the soft threshold: 5,000 − 3,000', [1_500, 1_500], 2_000],
    ['halfway: 5,000 − 4,000', [2_000, 2_000], 1_000],
    ['past the trigger: none left', [3_000, 3_000], 0],
  ])('headroom %s', (_, sizes, expected) => {
    expect(headroom(sizes)).toBe(expected);
  });

  it('measures the headroom of a tokens trigger in history, without pinned system messages', () => {
    const policy = prepared({ trigger: { kind: 'tokens', tokens: 4_000 } });
    // 2,400 of history (the 1,000-token system prompt is not counted): 1,600 to go.
    expect(headroom([1_200, 1_200], policy, [system('the rules', 1_000)])).toBe(1_600);
  });

  it.each([
    // budget, headroom, floor → kept
    ['the budget less the headroom', 16_000, 10_000, 0, 6_000],
    ['no headroom: the whole budget', 16_000, 0, 0, 16_000],
    ['headroom past the budget: nothing but what the plan must keep', 16_000, 20_000, 0, 0],
    ['never below the policy floor', 16_000, 15_000, 4_096, 4_096],
    ['a floor above the budget is the budget', 2_000, 5_000, 4_096, 2_000],
    ['a negative headroom counts as none', 16_000, -50, 0, 16_000],
  ])('keeps %s', (_, budget, room, floor, expected) => {
    expect(draftKeepRecentTokens(budget, room, floor)).toBe(expected);
  });
});

describe('preparedDraftUsable: the draft still covers a prefix of the view', () => {
  const draft: PreparedDraftFacts = {
    baseCompactionId: 'cmp_a',
    cutSeq: 40,
    changedSeq: null,
    settingsKey: 'k1',
  };
  const now: DraftUseFacts = {
    latestCompletedId: 'cmp_a',
    settingsKey: 'k1',
    reason: 'auto',
    strategy: 'summarize',
    force: false,
    instructions: null,
    keepRecentTokens: null,
    coversThroughSeq: 60,
    firstUnsummarizedSeq: 12,
  };
  it.each<[string, Partial<PreparedDraftFacts>, Partial<DraftUseFacts>, string | null]>([
    ['the same boundary, nothing changed', {}, {}, null],
    ['no compaction before, none since', { baseCompactionId: null }, { latestCompletedId: null }, null],
    [
      'a compaction completed since (the boundary moved)',
      {},
      { latestCompletedId: 'cmp_b' },
      'boundary-moved',
    ],
    ['a compaction completed since the first one', { baseCompactionId: null }, {}, 'boundary-moved'],
    ['a message before the cut changed', { changedSeq: 39 }, {}, 'message-changed'],
    ['the first kept message changed (kept verbatim)', { changedSeq: 40 }, {}, null],
    ['a message after the cut changed', { changedSeq: 55 }, {}, null],
    ['the policy or model changed', {}, { settingsKey: 'k2' }, 'settings-changed'],
    ['a manual compaction', {}, { reason: 'manual' }, 'request-differs'],
    ['an emergency', {}, { reason: 'overflow', force: true }, 'request-differs'],
    ['its own instructions', {}, { instructions: 'keep the API' }, 'request-differs'],
    ['its own keep budget', {}, { keepRecentTokens: 500 }, 'request-differs'],
    ['the truncate strategy', {}, { strategy: 'truncate' }, 'request-differs'],
    [
      'the cut is the first message (nothing to summarise)',
      {},
      { firstUnsummarizedSeq: 40 },
      'cut-outside-view',
    ],
    ['the view holds nothing but summaries', {}, { firstUnsummarizedSeq: null }, 'cut-outside-view'],
    ['the cut keeps nothing of the covered range', {}, { coversThroughSeq: 39 }, null],
    ['the cut lies past the covered range', {}, { coversThroughSeq: 38 }, 'cut-outside-view'],
  ])('%s', (_, draftChange, nowChange, reason) => {
    const verdict = preparedDraftUsable({ ...draft, ...draftChange }, { ...now, ...nowChange });
    expect(verdict).toEqual(reason === null ? { usable: true } : { usable: false, reason });
  });
});
