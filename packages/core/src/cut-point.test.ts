import { countLeadingSummaryMessages } from './summary-messages';
import { describe, expect, it } from 'vitest';
import { findCutPoint, isForced, isTurnStart, keepRecentTokensFor, type CutPointOptions } from './cut-point';
import type { CompactionReason, Message, ModelInfo } from './model';
import { POLICY_PRESETS, resolvePolicy, type Policy } from './policy';
import { assistant, conversation, messages, model, summary, toolPart, user } from './test-support/builders';

const cut = (view: Message[], options: CutPointOptions) => findCutPoint(view, options);

describe('findCutPoint (Opal: nearest user message at or after the budget point)', () => {
  it.each<[string, Message[], CutPointOptions, { index: number; kind: string; keptTokens: number } | null]>([
    // From the end: 5000, 10,000, 15,000 ≥ 12,000 at index 3; the next user message is index 4.
    [
      'cuts at the user message after the point',
      messages('uauaua', 5000),
      { keepRecentTokens: 12_000 },
      { index: 4, kind: 'turn-start', keptTokens: 10_000 },
    ],
    [
      'a point on a user message cuts there',
      messages('uauaua', 5000),
      { keepRecentTokens: 10_000 },
      { index: 4, kind: 'turn-start', keptTokens: 10_000 },
    ],
    ['everything fits: nothing to compact', messages('uauaua', 5000), { keepRecentTokens: 40_000 }, null],
    // `u a a a` at 100 each, keep 200: the walk reaches 200 at index 2 and exceeds it at index 1.
    [
      'cutWhen reached (default, klaude-code): the point where the tokens reach the budget',
      messages('uaaa', 100),
      { keepRecentTokens: 200 },
      { index: 2, kind: 'mid-turn', keptTokens: 200 },
    ],
    [
      'cutWhen exceeded (Opal\'s "exceeds keep_recent_tokens"): one message further back',
      messages('uaaa', 100),
      { keepRecentTokens: 200, cutWhen: 'exceeded' },
      { index: 1, kind: 'mid-turn', keptTokens: 300 },
    ],
    [
      'exactly the budget: the first message is the point, nothing before it',
      messages('uauaua', 5000),
      { keepRecentTokens: 30_000 },
      null,
    ],
    // One long turn: 2000 per assistant message; 6000 ≥ 5000 three messages from the end.
    [
      'inside the last turn: cuts mid-turn',
      messages('uaaaaaaaaaa', [1000, ...Array<number>(10).fill(2000)]),
      { keepRecentTokens: 5000 },
      { index: 8, kind: 'mid-turn', keptTokens: 6000 },
    ],
    [
      "klaude-code's mode cuts at the point itself",
      messages('uauaua', 5000),
      { keepRecentTokens: 12_000, cutAt: 'message' },
      { index: 3, kind: 'mid-turn', keptTokens: 15_000 },
    ],
    [
      'a previous summary is never the only thing compacted',
      messages('sua', [1000, 50_000, 100]),
      { keepRecentTokens: 10_000 },
      null,
    ],
    [
      'after a previous summary',
      messages('suauaa', [1000, 100, 100, 100, 100, 50_000]),
      { keepRecentTokens: 10_000 },
      { index: 5, kind: 'mid-turn', keptTokens: 50_000 },
    ],
  ])('%s', (_name, view, options, expected) => {
    expect(cut(view, options)).toEqual(expected);
  });

  it.each<[string, Message[], number | null]>([
    ['keeps the last 2 messages when nothing else would be compacted', messages('uauau', 100), 3],
    ['after a summary too', messages('suaua', 100), 3],
    ['not with only 2 messages after the summary', messages('sua', 100), null],
    ['not with 2 messages at all', messages('ua', 100), null],
  ])('force (Opal emergency): %s', (_name, view, expected) => {
    const forced = cut(view, { keepRecentTokens: 20_000, force: true });
    expect(forced?.index ?? null).toBe(expected);
    if (forced) expect(forced.kind).toBe('forced');
    expect(cut(view, { keepRecentTokens: 20_000 })).toBeNull();
  });

  it('force does not replace a natural cut', () => {
    expect(cut(messages('uauaua', 5000), { keepRecentTokens: 12_000, force: true })).toMatchObject({
      index: 4,
      kind: 'turn-start',
    });
  });

  it('a forced cut keeps the last 2 messages whatever tool parts they hold (a part carries call and result)', () => {
    const view = conversation([
      user('go', 10),
      assistant('thinking', { tokens: 10 }),
      assistant([toolPart('bash', 5, { tokens: 10 })]),
      assistant([toolPart('bash', 5, { tokens: 10 })]),
      assistant('done', { tokens: 10 }),
    ]);
    expect(cut(view, { keepRecentTokens: 1_000_000, force: true })).toEqual({
      index: 3,
      kind: 'forced',
      keptTokens: 20,
    });
  });

  describe("the topic reference's minimum verbatim exchanges", () => {
    const view = messages('uauaua', [10, 10, 10, 50_000, 10, 10]);

    it('moves the cut back to keep 2 user turns', () => {
      expect(cut(view, { keepRecentTokens: 15, minKeptUserTurns: 0 })).toMatchObject({ index: 4 });
      expect(cut(view, { keepRecentTokens: 15, minKeptUserTurns: 2 })).toMatchObject({
        index: 2,
        kind: 'turn-start',
      });
    });

    it('compacts nothing when fewer turns exist than must be kept', () => {
      expect(cut(view, { keepRecentTokens: 15, minKeptUserTurns: 3 })).toBeNull();
    });
  });

  it('helpers: real turn starts and the leading summary region', () => {
    const view = [user('compact', 5, { summary: true }), summary('s', 10), user('q', 5), assistant('a')];
    expect(view.map(isTurnStart)).toEqual([false, false, true, false]);
    expect(countLeadingSummaryMessages(view)).toBe(2);
    expect(countLeadingSummaryMessages([])).toBe(0);
  });
});

describe('keepRecentTokensFor', () => {
  const claude = model(200_000, 64_000);
  const gpt4o = model(128_000, 16_384);
  const small = model(32_000, 4096);

  it.each<[string, CompactionReason, ModelInfo, Policy, number]>([
    ['auto: window / 4', 'auto', claude, POLICY_PRESETS.opencode, 50_000],
    ['emergency: window / 5', 'overflow', claude, POLICY_PRESETS.opencode, 40_000],
    ['manual: 20,000', 'manual', claude, POLICY_PRESETS.opencode, 20_000],
    ['auto on 128k', 'auto', gpt4o, POLICY_PRESETS.opencode, 32_000],
    ['emergency on 128k', 'overflow', gpt4o, POLICY_PRESETS.opencode, 25_600],
    ['manual never keeps more than auto would (32k window)', 'manual', small, POLICY_PRESETS.opencode, 8000],
    ['klaude: min(20000, 35 %) on 200k', 'auto', claude, POLICY_PRESETS.klaude, 20_000],
    ['klaude: the same for manual', 'manual', claude, POLICY_PRESETS.klaude, 20_000],
    ['klaude: and for overflow', 'overflow', claude, POLICY_PRESETS.klaude, 20_000],
    ['klaude: 35 % of 32k', 'auto', small, POLICY_PRESETS.klaude, 11_200],
    ['klaude: floor of 4096 on 8k', 'auto', model(8000, 1000), POLICY_PRESETS.klaude, 4096],
    ['topic: the verbatim window', 'auto', claude, POLICY_PRESETS.topic, 3000],
    ['unlimited window: the manual budget', 'auto', model(0, 4096), POLICY_PRESETS.opencode, 20_000],
    ['unlimited window, klaude: its ceiling', 'overflow', model(0, 4096), POLICY_PRESETS.klaude, 20_000],
    [
      // usable 7500, minus a summary of 20 % of it (1500)
      'never more than the usable input minus the summary',
      'auto',
      model(10_000, 8000),
      resolvePolicy({ keepRecent: { autoRatio: 1 } }),
      6000,
    ],
    // The 4k window of a local model: usable 3072, summary 614, keep window / 4.
    ['4k: auto keeps window / 4', 'auto', model(4096, 4096), POLICY_PRESETS.opencode, 1024],
    // klaude's floor of 4096 is more than its trigger leaves: 4096 − 2048 reserve − 409 summary
    // (20 % of the 2,048 its reserve leaves for the prompt).
    [
      'klaude on 4k: the trigger point minus the summary',
      'auto',
      model(4096, 4096),
      POLICY_PRESETS.klaude,
      1639,
    ],
    // The topic reference's 3000-token verbatim window on a 4k model: 3072 usable − 500 of summary.
    ['topic on 4k: the verbatim window, bounded', 'auto', model(4096, 4096), POLICY_PRESETS.topic, 2572],
    // Before: usable 0 on gpt-4 (8192 / 8192) made every budget 0.
    ['gpt-4: auto keeps window / 4', 'auto', model(8192, 8192), POLICY_PRESETS.opencode, 2048],
    ['gpt-4: emergency keeps window / 5', 'overflow', model(8192, 8192), POLICY_PRESETS.opencode, 1638],
    ['gpt-4: manual never more than auto', 'manual', model(8192, 8192), POLICY_PRESETS.opencode, 2048],
    [
      'a bad input limit does not zero the budget',
      'auto',
      { ...model(8192, 1024), inputLimit: -5 },
      POLICY_PRESETS.opencode,
      2048,
    ],
    [
      'a configured manual budget',
      'manual',
      claude,
      resolvePolicy({ keepRecent: { manualTokens: 35_000 } }),
      35_000,
    ],
  ])('%s', (_name, reason, info, policy, expected) => {
    expect(keepRecentTokensFor(reason, info, policy)).toBe(expected);
  });

  it.each<CompactionReason>(['auto', 'manual', 'overflow'])(
    'a per-request override wins for %s',
    (reason) => {
      expect(keepRecentTokensFor(reason, claude, POLICY_PRESETS.opencode, 5000)).toBe(5000);
      expect(keepRecentTokensFor(reason, claude, POLICY_PRESETS.topic, 12_345.7)).toBe(12_345);
      expect(keepRecentTokensFor(reason, claude, POLICY_PRESETS.opencode, null)).toBe(
        keepRecentTokensFor(reason, claude, POLICY_PRESETS.opencode),
      );
    },
  );

  it('only overflow emergencies are forced', () => {
    expect((['auto', 'manual', 'overflow'] as const).map(isForced)).toEqual([false, false, true]);
  });
});
