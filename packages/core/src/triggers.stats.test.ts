/**
 * `evaluateTriggerFromStats`: the trigger on numbers summed elsewhere (db `contextTokenStats`),
 * so the API decides on every append without loading the history. Same reasons and loop guards
 * as `evaluateTrigger` (triggers.property.test.ts holds the two together).
 */
import { describe, expect, it } from 'vitest';
import { POLICY_PRESETS, resolvePolicy } from './policy';
import { assistant, model, summary, usage, user } from './test-support/builders';
import { evaluateTriggerFromStats, triggerStatsOf, type TriggerReason, type TriggerStats } from './triggers';

const opencode = POLICY_PRESETS.opencode;
const gpt4o = model(128_000, 16_384);
const claude = model(200_000, 64_000);
const half = resolvePolicy({ trigger: { kind: 'ratio', ratio: 0.5 } });

describe('evaluateTriggerFromStats (numbers summed in SQL, no history loaded)', () => {
  const stats = (overrides: Partial<TriggerStats>): TriggerStats => ({
    tokens: 0,
    report: null,
    newestSeq: 10,
    newestIsSummary: false,
    lastCompactionSeq: null,
    lastCompactionTokensAfter: null,
    model: gpt4o,
    policy: opencode,
    ...overrides,
  });
  const stop = (input: number, output = 10) => ({ usage: usage(input, output), finish: 'stop' as const });

  it.each<[string, Partial<TriggerStats>, TriggerReason, 'auto' | 'overflow' | null]>([
    ['one token over usable', { tokens: 111_617 }, 'threshold', 'auto'],
    ['exactly usable', { tokens: 111_616 }, 'below-threshold', null],
    ['auto off', { tokens: 500_000, policy: resolvePolicy({ auto: false }) }, 'auto-disabled', null],
    ['an empty session', { newestSeq: null }, 'empty', null],
    ['the newest message is a summary', { tokens: 500_000, newestIsSummary: true }, 'just-compacted', null],
    [
      'nothing after the covered range (truncate-only compaction)',
      { tokens: 500_000, newestSeq: 20, lastCompactionSeq: 20 },
      'nothing-new',
      null,
    ],
    [
      'one message after the covered range',
      { tokens: 500_000, newestSeq: 21, lastCompactionSeq: 20 },
      'threshold',
      'auto',
    ],
    [
      'a silent overflow: reported input above the window',
      { report: stop(130_000) },
      'usage-overflow',
      'overflow',
    ],
    [
      'truncated to fit: stopped for length with nothing written',
      { report: { usage: usage(127_000, 0), finish: 'length' } },
      'usage-overflow',
      'overflow',
    ],
    ['a report within the window', { tokens: 90_000, report: stop(90_000) }, 'below-threshold', null],
    ['unlimited window', { tokens: 5_000_000, model: model(0, 4096) }, 'unlimited-window', null],
    [
      'no room (klaude on a 2000 window)',
      { tokens: 100, model: model(2000, 500), policy: POLICY_PRESETS.klaude },
      'no-room',
      null,
    ],
    // Half of the window: the threshold (64,000) is below the usable 111,616, and a quarter of
    // it (16,000) must be appended before the guards let it fire again.
    [
      'ineffective compaction: 65k left, 200 appended',
      { tokens: 65_200, lastCompactionTokensAfter: 65_000, policy: half },
      'ineffective-compaction',
      null,
    ],
    [
      'ineffective compaction: a quarter of the threshold appended fires again',
      { tokens: 65_000 + 16_000, lastCompactionTokensAfter: 65_000, policy: half },
      'threshold',
      'auto',
    ],
    [
      'over the usable window, an ineffective compaction does not hold',
      { tokens: 112_200, lastCompactionTokensAfter: 112_000 },
      'threshold',
      'auto',
    ],
    [
      'an emergency is never held by the ineffective-compaction guard',
      { tokens: 65_200, lastCompactionTokensAfter: 65_000, policy: half, report: stop(130_000) },
      'usage-overflow',
      'overflow',
    ],
    [
      'the last compaction failed at 65k and 200 were appended since: holds',
      { tokens: 65_200, lastUnsuccessful: { tokensBefore: 65_000 }, policy: half },
      'last-compaction-unsuccessful',
      null,
    ],
    [
      'the last compaction was skipped, then a quarter of the threshold was appended: fires again',
      { tokens: 65_000 + 16_000, lastUnsuccessful: { tokensBefore: 65_000 }, policy: half },
      'threshold',
      'auto',
    ],
    [
      'failed before measuring: holds until a quarter of the threshold above it',
      { tokens: 64_000 + 15_999, lastUnsuccessful: { tokensBefore: null }, policy: half },
      'last-compaction-unsuccessful',
      null,
    ],
    [
      'over the usable window, a failed compaction does not hold',
      { tokens: 112_200, lastUnsuccessful: { tokensBefore: 112_000, errorCode: 'llm_fatal' } },
      'threshold',
      'auto',
    ],
    [
      'an emergency is not held after a failed compaction',
      { tokens: 112_200, lastUnsuccessful: { tokensBefore: 112_000 }, report: stop(130_000) },
      'usage-overflow',
      'overflow',
    ],
    [
      'an emergency after one the pinned messages made fail, 200 appended since: holds',
      {
        tokens: 112_200,
        lastUnsuccessful: { tokensBefore: 112_000, errorCode: 'context_cannot_fit' },
        report: stop(130_000),
      },
      'context-cannot-fit',
      null,
    ],
    [
      'an emergency after one the pinned messages made fail, a quarter of the threshold appended: fires again',
      {
        tokens: 112_000 + 27_904,
        lastUnsuccessful: { tokensBefore: 112_000, errorCode: 'context_cannot_fit' },
        report: stop(130_000),
      },
      'usage-overflow',
      'overflow',
    ],
    [
      'Opal: 80 % of 200k (inclusive)',
      { tokens: 160_000, model: claude, policy: POLICY_PRESETS.opal },
      'threshold',
      'auto',
    ],
  ])('%s', (_name, overrides, reason, compactionReason) => {
    const verdict = evaluateTriggerFromStats(stats(overrides));
    expect(verdict.reason).toBe(reason);
    expect(verdict.compactionReason).toBe(compactionReason);
    expect(verdict.compact).toBe(compactionReason !== null);
  });

  it('reports the same numbers as the status', () => {
    expect(evaluateTriggerFromStats(stats({ tokens: 120_000 }))).toEqual({
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

  it('triggerStatsOf takes from a view what the SQL sums', () => {
    const messages = [
      user('compact', 5, { seq: 40, id: 'm40', summary: true }),
      summary('summary', 2000, { seq: 41, id: 'm41' }),
      user('kept', 500, { seq: 30, id: 'm30' }),
      assistant('a', { seq: 42, id: 'm42', tokens: 10, usage: usage(3000, 10) }),
    ];
    expect(
      triggerStatsOf({ messages, model: gpt4o, policy: opencode, lastCompactionTokensAfter: 2505 }),
    ).toEqual({
      tokens: 3000 + 10,
      pinnedTokens: 0,
      report: { usage: usage(3000, 10), finish: 'stop' },
      newestSeq: 42,
      newestIsSummary: false,
      lastCompactionSeq: 41,
      lastCompactionTokensAfter: 2505,
      lastUnsuccessful: null,
      model: gpt4o,
      policy: opencode,
    });
  });
});
