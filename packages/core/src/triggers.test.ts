import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, ModelInfo } from './model';
import { POLICY_PRESETS, resolvePolicy, type Policy } from './policy';
import { assistant, conversation, model, summary, system, usage, user } from './test-support/builders';
import {
  compactionThreshold,
  crossesThreshold,
  detectUsageOverflow,
  evaluateTrigger,
  isOverflow,
  outputReserve,
  reserveTokens,
  sessionStatus,
  usableTokens,
  type TriggerReason,
  statusFromEstimate,
} from './triggers';

const opencode = POLICY_PRESETS.opencode;
const gpt4o = model(128_000, 16_384);
const claude = model(200_000, 64_000);

/** A one-message view of `tokens` stored tokens (no usage report). */
const viewOf = (tokens: number): Message[] => conversation([user('context', tokens)]);

describe('usableTokens and outputReserve (OpenCode)', () => {
  it.each<[string, ModelInfo, Policy, number | null]>([
    ['gpt-4o: 128000 − min(16384, 32000)', gpt4o, opencode, 111_616],
    ['claude: 200000 − min(64000, 32000)', claude, opencode, 168_000],
    ['no declared max output: the cap is reserved', model(200_000, 0), opencode, 168_000],
    ['an input limit wins', model(400_000, 128_000, 272_000), opencode, 272_000],
    ['unlimited window (0)', model(0, 4096), opencode, null],
    ['a smaller reserve cap', gpt4o, resolvePolicy({ trigger: { outputReserveCap: 8000 } }), 120_000],
    ['other triggers use the default cap', claude, POLICY_PRESETS.opal, 168_000],
    // The reserve never takes more than a quarter of the window: before, usable was 0 here.
    ['max output above the window: reserve window / 4', model(16_000, 32_000), opencode, 12_000],
    ['gpt-4 (8192 / 8192): reserve 2048, not the whole window', model(8192, 8192), opencode, 6144],
    ['gpt-4-32k (32768 / 8192): OpenCode’s numbers', model(32_768, 8192), opencode, 24_576],
    ['gpt-3.5-turbo (16385 / 4096): OpenCode’s numbers', model(16_385, 4096), opencode, 12_289],
  ])('%s', (_name, info, policy, expected) => {
    expect(usableTokens(info, policy)).toBe(expected);
  });

  it.each([
    [100_000, 16_384, 32_000, 16_384],
    [200_000, 64_000, 32_000, 32_000],
    [200_000, 0, 32_000, 32_000],
    [200_000, 0, 8000, 8000],
    [100_000, 64_000, 32_000, 25_000],
    [8192, 8192, 32_000, 2048],
    [8192, 0, 32_000, 2048],
    [3, 4096, 32_000, 0],
  ])('outputReserve(window %i, max %i, cap %i) = %i', (window, maxOutput, cap, expected) => {
    expect(outputReserve(model(window, maxOutput), cap)).toBe(expected);
  });

  it('the prompt always keeps at least three quarters of the window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2_000_000 }),
        fc.integer({ min: 0, max: 2_000_000 }),
        fc.integer({ min: 1, max: 200_000 }),
        (window, maxOutput, cap) => {
          const policy = resolvePolicy({ trigger: { outputReserveCap: cap } });
          const usable = usableTokens(model(window, maxOutput), policy)!;
          expect(usable).toBeGreaterThanOrEqual(window * 0.75);
          expect(usable).toBeGreaterThan(0);
        },
      ),
    );
  });
});

describe('isOverflow: input + cache.read + output > usable (OpenCode)', () => {
  it.each([
    ['one token over', usage(100_000, 1617, { cacheRead: 10_000 }), gpt4o, opencode, true],
    ['exactly usable', usage(100_000, 1616, { cacheRead: 10_000 }), gpt4o, opencode, false],
    [
      'cache writes are not in OpenCode’s sum',
      usage(100_000, 0, { cacheWrite: 20_000 }),
      gpt4o,
      opencode,
      false,
    ],
    ['auto = false disables it', usage(200_000, 0), gpt4o, resolvePolicy({ auto: false }), false],
    ['unlimited window never overflows', usage(10_000_000, 0), model(0, 4096), opencode, false],
    [
      'reasoning is not context: output 5000 of which 4000 reasoning',
      usage(110_000, 5000, { reasoning: 4000 }),
      gpt4o,
      opencode,
      false,
    ],
    ['gpt-4: a small report is no overflow', usage(1000, 100), model(8192, 8192), opencode, false],
  ])('%s', (_name, report, info, policy, expected) => {
    expect(isOverflow(report, info, policy)).toBe(expected);
  });
});

describe('compactionThreshold per trigger kind', () => {
  it.each<[string, ModelInfo, Policy, number, boolean]>([
    ['overflow: usable, strict', gpt4o, opencode, 111_616, false],
    ['ratio 0.8 (Opal): 80 % of the window, inclusive', claude, POLICY_PRESETS.opal, 160_000, true],
    ['reserve (klaude): 200000 − 16384', claude, POLICY_PRESETS.klaude, 183_616, false],
    [
      'reserve on 32k: 25 % (8000) is smaller than 16384',
      model(32_000, 4096),
      POLICY_PRESETS.klaude,
      24_000,
      false,
    ],
    ['reserve on 4k: floor of 2048', model(4096, 1024), POLICY_PRESETS.klaude, 2048, false],
    ['tokens (docs/PRESETS.md, `topic`): 6000', claude, POLICY_PRESETS.topic, 6000, false],
    ['tokens needs no window', model(0, 4096), POLICY_PRESETS.topic, 6000, false],
  ])('%s', (_name, info, policy, tokens, inclusive) => {
    expect(compactionThreshold(info, policy)).toEqual({ tokens, inclusive });
  });

  it.each(['opencode', 'opal', 'klaude'] as const)(
    'an unlimited window never fires the %s trigger',
    (preset) => {
      expect(compactionThreshold(model(0, 4096), POLICY_PRESETS[preset])).toBeNull();
    },
  );

  it.each<[string, ModelInfo, Policy]>([
    ['reserve floor 2048 on a 2000 window', model(2000, 500), POLICY_PRESETS.klaude],
    ['reserve floor on exactly 2048', model(2048, 500), POLICY_PRESETS.klaude],
    ['an input limit of 0 or less', { ...model(8192, 1024), inputLimit: -1 }, opencode],
  ])('a threshold of 0 or less can never fire: %s', (_name, info, policy) => {
    expect(compactionThreshold(info, policy)).toBeNull();
  });

  it.each([
    [160_000, { tokens: 160_000, inclusive: true }, true],
    [159_999, { tokens: 160_000, inclusive: true }, false],
    [183_617, { tokens: 183_616, inclusive: false }, true],
    [183_616, { tokens: 183_616, inclusive: false }, false],
  ])('crossesThreshold(%i, %o) = %s', (tokens, threshold, expected) => {
    expect(crossesThreshold(tokens, threshold)).toBe(expected);
  });

  it('reserve resolves "16384 or 25 %" to the smaller, never below the floor', () => {
    const trigger = {
      kind: 'reserve',
      reserveTokens: 16_384,
      reserveRatio: 0.25,
      minReserveTokens: 2048,
    } as const;
    expect(reserveTokens(trigger, 200_000)).toBe(16_384);
    expect(reserveTokens(trigger, 64_000)).toBe(16_000);
    expect(reserveTokens(trigger, 4000)).toBe(2048);
  });
});

describe('detectUsageOverflow: silent overflow', () => {
  it.each([
    ["Opal's example: 250k reported on a 200k window", usage(250_000, 10), null, true],
    ["Opal's example: 150k on 200k", usage(150_000, 10), null, false],
    ['cache reads count as prompt', usage(50_000, 10, { cacheRead: 160_000 }), null, true],
    ['exactly the window is not over it', usage(200_000, 0), 'stop', false],
    ['truncated to fit: stopped for length with no output (pi)', usage(199_000, 0), 'length', true],
    ['a long answer is not an overflow', usage(199_000, 4000), 'length', false],
  ] as const)('%s', (_name, report, finish, expected) => {
    expect(detectUsageOverflow(report, claude, finish)).toBe(expected);
  });

  it('an unlimited window never overflows', () => {
    expect(detectUsageOverflow(usage(10_000_000, 0), model(0, 4096))).toBe(false);
  });
});

describe('sessionStatus', () => {
  it("API.md's example: 91234 of 111616 usable is 81.7 %", () => {
    expect(sessionStatus({ messages: viewOf(91_234), model: gpt4o, policy: opencode })).toEqual({
      tokens: 91_234,
      usable: 111_616,
      percent: 81.7,
      triggerTokens: 111_616,
      overflow: false,
    });
  });

  it.each<[string, Policy, number, { percent: number | null; triggerTokens: number | null }]>([
    // The topic spec's status: history tokens, the trigger threshold, percent of it.
    [
      'topic preset: 3,000 of the 6,000 trigger is 50 %',
      POLICY_PRESETS.topic,
      3000,
      { percent: 50, triggerTokens: 6000 },
    ],
    [
      'Opal: percent of usable, threshold 80 % of the window',
      POLICY_PRESETS.opal,
      3000,
      { percent: 2.7, triggerTokens: 102_400 },
    ],
    ['klaude: window − reserve', POLICY_PRESETS.klaude, 3000, { percent: 2.7, triggerTokens: 111_616 }],
  ])('%s', (_name, policy, tokens, expected) => {
    expect(sessionStatus({ messages: viewOf(tokens), model: gpt4o, policy })).toMatchObject(expected);
  });

  it('a tokens trigger measures history: pinned system messages are not in its percent', () => {
    const messages = conversation([
      system('rules', 5500),
      user('hi', 300),
      assistant('hello', { tokens: 300 }),
    ]);
    expect(
      sessionStatus({ messages, model: gpt4o, policy: POLICY_PRESETS.topic, pinSystemMessages: true }),
    ).toMatchObject({ tokens: 6100, triggerTokens: 6000, percent: 10 });
  });

  it.each([
    ['over usable', viewOf(111_617), gpt4o, true, 100],
    ['unlimited window', viewOf(5_000_000), model(0, 4096), false, null],
  ])('%s', (_name, messages, info, overflow, percent) => {
    const status = sessionStatus({ messages, model: info, policy: opencode });
    expect(status.overflow).toBe(overflow);
    expect(status.percent).toBe(percent);
  });

  it('flags a silent overflow reported by the provider', () => {
    const messages = conversation([user('q', 10), assistant('a', { tokens: 10, usage: usage(250_000, 10) })]);
    expect(sessionStatus({ messages, model: model(200_000, 0, 300_000), policy: opencode }).overflow).toBe(
      true,
    );
  });
});

describe('evaluateTrigger', () => {
  const check = (messages: Message[], info: ModelInfo, policy: Policy, lastCompactionSeq?: number) =>
    evaluateTrigger({
      messages,
      model: info,
      policy,
      ...(lastCompactionSeq === undefined ? {} : { lastCompactionSeq }),
    });

  it.each<[string, Message[], ModelInfo, Policy, TriggerReason, boolean]>([
    ['OpenCode: one token over usable', viewOf(111_617), gpt4o, opencode, 'threshold', true],
    ['OpenCode: exactly usable', viewOf(111_616), gpt4o, opencode, 'below-threshold', false],
    ['Opal: 80 % of 200k', viewOf(160_000), claude, POLICY_PRESETS.opal, 'threshold', true],
    ['Opal: just under 80 %', viewOf(159_999), claude, POLICY_PRESETS.opal, 'below-threshold', false],
    ['klaude: above window − 16384', viewOf(183_617), claude, POLICY_PRESETS.klaude, 'threshold', true],
    ['klaude: at window − 16384', viewOf(183_616), claude, POLICY_PRESETS.klaude, 'below-threshold', false],
    ['topic preset: above 6000', viewOf(6001), claude, POLICY_PRESETS.topic, 'threshold', true],
    [
      'topic preset: 24000 configured',
      viewOf(24_000),
      claude,
      resolvePolicy({ preset: 'topic', trigger: { tokens: 24_000 } }),
      'below-threshold',
      false,
    ],
    [
      'auto = false holds even above usable',
      viewOf(500_000),
      gpt4o,
      resolvePolicy({ auto: false }),
      'auto-disabled',
      false,
    ],
    ['empty session', [], gpt4o, opencode, 'empty', false],
    ['unlimited window', viewOf(5_000_000), model(0, 4096), opencode, 'unlimited-window', false],
    // Before: usable 0 on gpt-4 (8192 / 8192), so every append compacted.
    [
      'gpt-4: a small session does not compact',
      viewOf(100),
      model(8192, 8192),
      opencode,
      'below-threshold',
      false,
    ],
    ['gpt-4: above 6144 does', viewOf(6145), model(8192, 8192), opencode, 'threshold', true],
    [
      'klaude on a 2000 window: no room, never fires',
      viewOf(100),
      model(2000, 500),
      POLICY_PRESETS.klaude,
      'no-room',
      false,
    ],
  ])('%s', (_name, messages, info, policy, reason, compact) => {
    const verdict = check(messages, info, policy);
    expect(verdict.reason).toBe(reason);
    expect(verdict.compact).toBe(compact);
    expect(verdict.compactionReason).toBe(compact ? 'auto' : null);
    expect(verdict.trigger).toBe(policy.trigger.kind);
  });

  it('reports the numbers behind the decision', () => {
    expect(check(viewOf(120_000), gpt4o, opencode)).toEqual({
      tokens: 120_000,
      usable: 111_616,
      percent: 107.5,
      triggerTokens: 111_616,
      overflow: true,
      compact: true,
      reason: 'threshold',
      compactionReason: 'auto',
      trigger: 'overflow',
      threshold: 111_616,
    });
  });

  it('a silent usage overflow starts an emergency compaction', () => {
    const messages = conversation([user('q', 10), assistant('a', { tokens: 10, usage: usage(250_000, 10) })]);
    const verdict = check(messages, claude, opencode);
    expect(verdict).toMatchObject({ compact: true, reason: 'usage-overflow', compactionReason: 'overflow' });
    expect(check(messages, claude, resolvePolicy({ auto: false })).compact).toBe(false);
  });

  describe('loop guards', () => {
    // The previous compaction wrote seqs 40 and 41 and kept seqs 30–39; the kept assistant
    // turn reported a 158k prompt: the pre-compaction context.
    const compacted = [
      user('compact', 5, { seq: 40, id: 'm40', summary: true }),
      summary('summary', 2000, { seq: 41, id: 'm41' }),
      user('kept question', 500, { seq: 30, id: 'm30' }),
      assistant('kept answer', { seq: 31, id: 'm31', tokens: 3000, usage: usage(158_000, 3000) }),
    ];

    it('never right after a summary, even on stale numbers', () => {
      const verdict = check(compacted, claude, POLICY_PRESETS.opal);
      expect(verdict.reason).toBe('just-compacted');
      expect(verdict.compact).toBe(false);
    });

    it('a "Continue" message after the compaction does not re-trigger on the old usage', () => {
      const next = [...compacted, user('Continue if you have next steps', 20, { seq: 42, id: 'm42' })];
      const verdict = check(next, claude, POLICY_PRESETS.opal);
      expect(verdict.reason).toBe('below-threshold');
      expect(verdict.tokens).toBe(5 + 2000 + 500 + 3000 + 20);
    });

    it('the same history without the compaction would have fired', () => {
      // The history the 158k report measured, stored: a report adds at most a quarter of
      // Claude's usable 168,000 (42,000) over the stored count.
      const uncompacted = conversation([
        user('q', 120_000),
        assistant('a', { tokens: 3000, usage: usage(158_000, 3000) }),
        user('more', 20),
      ]);
      expect(check(uncompacted, claude, POLICY_PRESETS.opal).reason).toBe('threshold');
    });

    describe('ineffective compaction: it left the view above the threshold', () => {
      // Half of gpt-4o's window: the threshold is 64,000, well below the usable 111,616, and a
      // quarter of it (16,000) must be appended before firing again.
      const half = resolvePolicy({ trigger: { kind: 'ratio', ratio: 0.5 } });
      const after = (tokens: number, appended: number) => [
        user('compact', 5, { seq: 40, id: 'm40', summary: true }),
        summary('summary', 2000, { seq: 41, id: 'm41' }),
        user('kept', tokens - 2005, { seq: 30, id: 'm30' }),
        user('new', appended, { seq: 42, id: 'm42' }),
      ];
      const guarded = (messages: Message[], tokensAfter: number | null, policy: Policy = half) =>
        evaluateTrigger({ messages, model: gpt4o, policy, lastCompactionTokensAfter: tokensAfter });

      it.each<[string, number, number, number | null, TriggerReason]>([
        ['65k left, 200 appended: holds', 65_000, 200, 65_000, 'ineffective-compaction'],
        ['65k left, 15,999 appended: still holds', 65_000, 15_999, 65_000, 'ineffective-compaction'],
        ['65k left, 16,000 appended: fires', 65_000, 16_000, 65_000, 'threshold'],
        [
          'exactly the threshold left (crossed, it is inclusive): holds',
          64_000,
          1,
          64_000,
          'ineffective-compaction',
        ],
        ['just below the threshold left: fires', 63_999, 2, 63_999, 'threshold'],
        ['no tokensAfter given: fires', 65_000, 200, null, 'threshold'],
        ['below the threshold now: below-threshold', 30_000, 200, 65_000, 'below-threshold'],
      ])('%s', (_name, left, appended, tokensAfter, reason) => {
        const verdict = guarded(after(left, appended), tokensAfter);
        expect(verdict.reason).toBe(reason);
        expect(verdict.compact).toBe(reason === 'threshold');
      });

      it('over the usable window it does not hold: every model call would fail', () => {
        // 112k left on gpt-4o (usable 111,616): ineffective, or outrun by messages appended
        // while it ran; 200 appended since.
        expect(guarded(after(112_000, 200), 112_000, opencode)).toMatchObject({
          compact: true,
          reason: 'threshold',
          compactionReason: 'auto',
          overflow: true,
        });
      });

      it('never holds an emergency (a silent usage overflow)', () => {
        const messages = [
          ...after(65_000, 10),
          assistant('a', { seq: 43, id: 'm43', tokens: 10, usage: usage(130_000, 10) }),
        ];
        expect(guarded(messages, 65_000)).toMatchObject({ compact: true, reason: 'usage-overflow' });
      });
    });

    it('nothing appended since a compaction that wrote no summary (topic truncate)', () => {
      const kept = conversation([user('q', 200_000), assistant('a', { tokens: 10 })], 15);
      expect(check(kept, claude, POLICY_PRESETS.opal, 20).reason).toBe('nothing-new');
      expect(check(kept, claude, POLICY_PRESETS.opal, 14).reason).toBe('threshold');
    });
  });
});

describe('statusFromEstimate (an estimate made elsewhere, e.g. in SQL)', () => {
  const gpt4o = {
    id: 'gpt-4o',
    provider: 'openai',
    contextWindow: 128_000,
    maxOutputTokens: 16_384,
    inputLimit: null,
  };
  const policy = resolvePolicy();
  it.each([
    [
      'below usable',
      50_000,
      null,
      { usable: 111_616, percent: 44.8, triggerTokens: 111_616, overflow: false },
    ],
    [
      'above usable',
      111_617,
      null,
      { usable: 111_616, percent: 100, triggerTokens: 111_616, overflow: true },
    ],
    [
      'a silent overflow in the last report',
      1_000,
      {
        usage: { input: 130_000, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
        finish: 'stop' as const,
      },
      { usable: 111_616, percent: 0.9, triggerTokens: 111_616, overflow: true },
    ],
  ])('%s', (_label, tokens, report, expected) => {
    expect(statusFromEstimate({ tokens, report, model: gpt4o, policy })).toEqual({ tokens, ...expected });
  });

  it('has no usable room or percent for an unlimited window', () => {
    expect(
      statusFromEstimate({ tokens: 10, report: null, model: { ...gpt4o, contextWindow: 0 }, policy }),
    ).toEqual({
      tokens: 10,
      usable: null,
      percent: null,
      triggerTokens: null,
      overflow: false,
    });
  });
});
