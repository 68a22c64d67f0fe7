/**
 * Never stuck: while a session is over its usable window (every model call would fail), the
 * loop guards that hold after an ineffective, failed or skipped compaction do not hold, except
 * after the one failure no compaction can fix (`context_cannot_fit`: the pinned system messages
 * alone do not fit). The guards that need no new message stay.
 */
import { describe, expect, it } from 'vitest';
import { POLICY_PRESETS, resolvePolicy } from './policy';
import { model, usage } from './test-support/builders';
import {
  CONTEXT_CANNOT_FIT,
  evaluateTriggerFromStats,
  type TriggerReason,
  type TriggerStats,
} from './triggers';

const opencode = POLICY_PRESETS.opencode;
const gpt4o = model(128_000, 16_384);

describe('never stuck: the loop guards over the usable window', () => {
  // gpt-4o with OpenCode's trigger: threshold = usable = 111,616; a quarter of it is 27,904.
  const half = resolvePolicy({ trigger: { kind: 'ratio', ratio: 0.5 } });
  const high = resolvePolicy({ trigger: { kind: 'ratio', ratio: 0.95 } });
  const stats = (overrides: Partial<TriggerStats>): TriggerStats => ({
    tokens: 112_200,
    report: null,
    newestSeq: 10,
    newestIsSummary: false,
    lastCompactionSeq: 5,
    lastCompactionTokensAfter: null,
    model: gpt4o,
    policy: opencode,
    ...overrides,
  });
  const failed = (errorCode: string, tokensBefore: number | null = 112_000) => ({
    lastUnsuccessful: { tokensBefore, errorCode },
  });
  const silent = { report: { usage: usage(130_000, 10), finish: 'stop' as const } };

  it.each<[string, Partial<TriggerStats>, TriggerReason]>([
    ['failed on an LLM outage at 112k, 200 appended: fires', failed('llm_retries_exhausted'), 'threshold'],
    ['skipped (nothing to compact) at 112k, 200 appended: fires', failed('nothing_to_compact'), 'threshold'],
    ['failed before measuring: fires', failed('internal_error', null), 'threshold'],
    [
      'ineffective or outrun at 112k, 200 appended: fires',
      { lastCompactionTokensAfter: 112_000 },
      'threshold',
    ],
    [
      'the pinned system messages alone do not fit, 200 appended: holds',
      failed(CONTEXT_CANNOT_FIT),
      'context-cannot-fit',
    ],
    [
      'the pinned system messages alone did not fit, a quarter of the threshold appended: tries again',
      { tokens: 112_000 + 27_904, ...failed(CONTEXT_CANNOT_FIT) },
      'threshold',
    ],
    [
      'cannot fit, failed before measuring: holds up to a quarter above the threshold',
      { tokens: 111_616 + 27_903, ...failed(CONTEXT_CANNOT_FIT, null) },
      'context-cannot-fit',
    ],
    [
      'cannot fit holds the emergency of a silent overflow too',
      { ...silent, ...failed(CONTEXT_CANNOT_FIT) },
      'context-cannot-fit',
    ],
    [
      'an emergency after a failed emergency (LLM outage): fires',
      { ...silent, ...failed('llm_fatal') },
      'usage-overflow',
    ],
    // A threshold above the usable window would let the session overflow before it fires: over
    // the usable input the session compacts whatever the threshold says.
    ['over usable, below a threshold above it (ratio 0.95: 121,600): fires', { policy: high }, 'over-window'],
    [
      'over usable and above such a threshold, after an ineffective compaction: fires',
      { tokens: 121_800, policy: high, lastCompactionTokensAfter: 121_700 },
      'threshold',
    ],
    [
      'the same below usable (ratio 0.5), after an ineffective compaction: holds',
      { tokens: 65_200, policy: half, lastCompactionTokensAfter: 65_000 },
      'ineffective-compaction',
    ],
    ['just compacted: holds', { newestIsSummary: true }, 'just-compacted'],
    ['nothing new since the last compaction: holds', { newestSeq: 5 }, 'nothing-new'],
    ['auto off: holds', { policy: resolvePolicy({ auto: false }) }, 'auto-disabled'],
    // Below the usable window the guards hold as before (threshold 64,000, a quarter 16,000).
    [
      'below usable: a failure holds',
      { tokens: 65_200, policy: half, ...failed('llm_fatal', 65_000) },
      'last-compaction-unsuccessful',
    ],
    [
      'below usable: cannot fit holds',
      { tokens: 65_200, policy: half, ...failed(CONTEXT_CANNOT_FIT, 65_000) },
      'context-cannot-fit',
    ],
  ])('%s', (_name, overrides, reason) => {
    const verdict = evaluateTriggerFromStats(stats(overrides));
    expect(verdict.reason).toBe(reason);
    const fires = reason === 'threshold' || reason === 'over-window' || reason === 'usage-overflow';
    expect(verdict.compact).toBe(fires);
    expect(verdict.compactionReason).toBe(!fires ? null : reason === 'usage-overflow' ? 'overflow' : 'auto');
  });
});
