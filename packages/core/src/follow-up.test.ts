/**
 * `evaluateFollowUp`: after a compaction completed, whether the messages appended while it ran
 * call for another one at once (outrun), judged as the next append's trigger would judge them.
 */
import { describe, expect, it } from 'vitest';
import { evaluateFollowUp, mayFollowUp, type AppendedWhileRunning } from './follow-up';
import { POLICY_PRESETS, resolvePolicy, type Policy } from './policy';
import { model } from './test-support/builders';
import type { TriggerReason } from './triggers';

const gpt4o = model(128_000, 16_384);
// Half of the window: threshold 64,000 (inclusive), a quarter of it 16,000; usable 111,616.
const half = resolvePolicy({ trigger: { kind: 'ratio', ratio: 0.5 } });
const opencode = POLICY_PRESETS.opencode;

describe('evaluateFollowUp', () => {
  const appended = (tokens: number, newestSeq: number | null = 30): AppendedWhileRunning => ({
    tokens,
    newestSeq,
  });

  it.each<[string, number, AppendedWhileRunning, Policy, TriggerReason]>([
    // It brought 11,359 tokens down while 60,424 arrived: its own result is below the threshold.
    ['outrun by appends while it ran', 71_783, appended(60_424), half, 'threshold'],
    [
      'nothing appended while it ran: left to the next append',
      71_783,
      appended(0, null),
      half,
      'nothing-new',
    ],
    [
      'its own result was above the threshold, 1,000 appended: held',
      66_000,
      appended(1_000),
      half,
      'ineffective-compaction',
    ],
    [
      'its own result was above the threshold, a quarter appended',
      81_000,
      appended(16_000),
      half,
      'threshold',
    ],
    ['over the usable window, even if ineffective', 112_200, appended(200), opencode, 'threshold'],
    ['below the threshold with what arrived', 50_000, appended(40_000), half, 'below-threshold'],
    [
      'auto compaction off',
      71_783,
      appended(60_424),
      resolvePolicy({ auto: false, trigger: half.trigger }),
      'auto-disabled',
    ],
  ])('%s', (_name, tokensAfter, what, policy, reason) => {
    const verdict = evaluateFollowUp({
      tokensAfter,
      coversThroughSeq: 20,
      appended: what,
      model: gpt4o,
      policy,
    });
    expect(verdict.reason).toBe(reason);
    expect(verdict.compact).toBe(reason === 'threshold');
    expect(verdict.compactionReason).toBe(reason === 'threshold' ? 'auto' : null);
  });

  it.each<[string, number, Policy, boolean]>([
    ['at the threshold (inclusive)', 64_000, half, true],
    ['below it', 63_999, half, false],
    ['over usable', 111_617, opencode, true],
    ['auto off', 111_617, resolvePolicy({ auto: false }), false],
    ['unlimited window', 5_000_000, opencode, false],
    // The topic reference's fixed 6,000 on a 4k model (usable 3,072): over the usable input, below the threshold.
    ['over usable on 4k, below a threshold above it', 3_100, POLICY_PRESETS.topic, true],
  ])('mayFollowUp %s', (name, tokensAfter, policy, expected) => {
    const info =
      name === 'unlimited window' ? model(0, 4096) : name.includes('4k') ? model(4096, 4096) : gpt4o;
    expect(mayFollowUp({ tokensAfter, model: info, policy })).toBe(expected);
  });
});

describe('a tokens trigger follows up on history, not on pinned system messages (topic preset)', () => {
  const topic = POLICY_PRESETS.topic;
  // A 5,500-token system prompt and a 3,000-token verbatim window left: 8,500 in the view, 3,000 history.
  it('no follow-up while the history is below the 6,000 trigger', () => {
    expect(mayFollowUp({ tokensAfter: 8500, model: gpt4o, policy: topic, pinnedTokens: 5500 })).toBe(false);
    expect(mayFollowUp({ tokensAfter: 8500, model: gpt4o, policy: topic })).toBe(true);
  });

  it('a follow-up once what was appended takes the history over it', () => {
    const verdict = evaluateFollowUp({
      tokensAfter: 12_000,
      coversThroughSeq: 20,
      appended: { tokens: 3500, newestSeq: 30 },
      model: gpt4o,
      policy: topic,
      pinnedTokens: 5500,
    });
    expect(verdict).toMatchObject({ compact: true, reason: 'threshold' });
  });
});
