/**
 * When to compact automatically. Besides the threshold (trigger-threshold.ts), a provider that
 * silently accepted an oversized prompt (Opal's `usage_overflow?`) triggers an emergency
 * compaction. Loop guards keep compaction from re-firing right after itself.
 *
 * The thresholds and the numbers the decision is made on (trigger-stats.ts) are exported from
 * here too: the trigger's callers and tests import all of it from this module.
 */
import type { CompactionReason } from './model';
import type { TriggerKind } from './policy';
import { compactionThreshold, crossesThreshold, detectUsageOverflow } from './trigger-threshold';
import {
  statusFromEstimate,
  triggerStatsOf,
  type SessionStatus,
  type TriggerInput,
  type TriggerStats,
} from './trigger-stats';

export * from './trigger-threshold';
export * from './trigger-stats';

/**
 * Why a verdict is what it is. Firing: `threshold` (auto compaction), `over-window` (auto: below
 * a threshold that lies above the usable input, but over that input), `usage-overflow`
 * (emergency). Holding: `auto-disabled`, `empty`, `just-compacted` (the newest message is a
 * compaction's summary, or the synthetic continuation appended after it), `nothing-new`
 * (nothing appended since the last compaction), `unlimited-window`, `no-room` (a window-based
 * threshold of 0 or less), `ineffective-compaction` (the last compaction left the view above the
 * threshold and little was appended since), `last-compaction-unsuccessful` (the newest
 * compaction failed or was skipped and little was appended since), `context-cannot-fit` (it
 * failed because the pinned system messages alone do not fit, and little was appended since),
 * `below-threshold`.
 */
export type TriggerReason =
  | 'threshold'
  | 'usage-overflow'
  | 'auto-disabled'
  | 'empty'
  | 'just-compacted'
  | 'nothing-new'
  | 'unlimited-window'
  | 'no-room'
  | 'ineffective-compaction'
  | 'last-compaction-unsuccessful'
  | 'context-cannot-fit'
  | 'over-window'
  | 'below-threshold';

/**
 * After a compaction that left the view above the threshold, the threshold trigger waits until
 * this share of the threshold was appended since. A compaction keeps about a quarter of the
 * window (Opal: window / 4); once that much is new, the next one can cut inside the new messages
 * and compact the tail the last one could not. Before that it would keep the same tail, so it
 * would fire on every append and fail the same way ("compaction re-fires right after a
 * compaction"). A session over its usable window is not held (every model call would fail),
 * except after {@link CONTEXT_CANNOT_FIT}.
 */
export const INEFFECTIVE_COMPACTION_REFIRE_SHARE = 0.25;

/**
 * The error code of the one failure no compaction can fix: the pinned system messages alone
 * leave no room. Another compaction would fail the same way, so even a session over its window
 * waits until it grew by {@link INEFFECTIVE_COMPACTION_REFIRE_SHARE} of the threshold.
 */
export const CONTEXT_CANNOT_FIT = 'context_cannot_fit';
/** Whether to start an automatic compaction now, with the numbers behind the decision. */
export interface TriggerVerdict extends SessionStatus {
  compact: boolean;
  reason: TriggerReason;
  /** The compaction to create when `compact`: `auto` for a threshold, `overflow` (emergency, force) otherwise. */
  compactionReason: Extract<CompactionReason, 'auto' | 'overflow'> | null;
  trigger: TriggerKind;
  /** Where the trigger fires; `null` when it cannot (unlimited window). */
  threshold: number | null;
}
/** The reasons that fire, and the compaction each one creates. */
const FIRING: Partial<Record<TriggerReason, 'auto' | 'overflow'>> = {
  threshold: 'auto',
  'over-window': 'auto',
  'usage-overflow': 'overflow',
};

/**
 * Should an automatic compaction start now? Checked on every append and every finished turn,
 * from numbers summed elsewhere (the API passes db `contextTokenStats`; it never loads the
 * messages). Holds when `auto` is off, right after a compaction (its summary is the newest
 * message), and when nothing was appended since the last compaction (stale usage cannot
 * re-trigger it: users' endless-loop complaint). Below the usable window it also holds after an
 * ineffective compaction (it left `lastCompactionTokensAfter` at or above the threshold) and
 * after a failed or skipped one, until {@link INEFFECTIVE_COMPACTION_REFIRE_SHARE} of the
 * threshold was appended since. Over the usable window (`status.overflow`: every model call
 * would fail) those two guards do not hold, so each append asks for one compaction; only a
 * {@link CONTEXT_CANNOT_FIT} failure still holds, since no compaction can fix it. A silent usage
 * overflow fires an emergency (`compactionReason: 'overflow'`).
 */
export function evaluateTriggerFromStats(input: TriggerStats): TriggerVerdict {
  const status = statusFromEstimate(input);
  const thresholdPoint = compactionThreshold(input.model, input.policy);
  const verdict = (reason: TriggerReason): TriggerVerdict => ({
    ...status,
    compact: FIRING[reason] !== undefined,
    reason,
    compactionReason: FIRING[reason] ?? null,
    trigger: input.policy.trigger.kind,
    threshold: thresholdPoint?.tokens ?? null,
  });

  if (!input.policy.auto) return verdict('auto-disabled');
  if (input.newestSeq === null) return verdict('empty');
  if (input.newestIsSummary) return verdict('just-compacted');
  const lastCompactionSeq = input.lastCompactionSeq ?? null;
  if (lastCompactionSeq !== null && input.newestSeq <= lastCompactionSeq) return verdict('nothing-new');
  const base = thresholdPoint?.tokens ?? status.usable ?? 0;
  const refire = base * INEFFECTIVE_COMPACTION_REFIRE_SHARE;
  /** Whether less than the refire share was appended since the view measured `from` tokens. */
  const littleSince = (from: number | null) => status.tokens - (from ?? base) < refire;
  const unsuccessful = input.lastUnsuccessful;
  const cannotFit = unsuccessful?.errorCode === CONTEXT_CANNOT_FIT && littleSince(unsuccessful.tokensBefore);
  if (input.report !== null && detectUsageOverflow(input.report.usage, input.model, input.report.finish)) {
    // The report stays the newest usage until the next model call: after a failure no
    // compaction can fix, every append would request the same emergency and fail the same way.
    return verdict(cannotFit ? 'context-cannot-fit' : 'usage-overflow');
  }
  if (thresholdPoint === null)
    return verdict(input.model.contextWindow <= 0 ? 'unlimited-window' : 'no-room');
  // A `tokens` trigger counts history: pinned system messages, never compacted, are not in it.
  const pinned = input.policy.trigger.kind === 'tokens' ? (input.pinnedTokens ?? 0) : 0;
  if (!crossesThreshold(status.tokens - pinned, thresholdPoint)) {
    // A threshold above the usable input (a fixed count on a small window, 80 % of a window
    // whose output reserve is a quarter of it) would let the session overflow first.
    if (!status.overflow) return verdict('below-threshold');
    return verdict(cannotFit ? 'context-cannot-fit' : 'over-window');
  }
  if (cannotFit) return verdict('context-cannot-fit');
  // Over the usable window the guards below would leave the session unusable: a compaction
  // outrun by concurrent appends looks ineffective, and a failure may not recur (an LLM outage
  // ends). One compaction per append at most: the request fires only on an append, and a
  // session has one active compaction.
  if (status.overflow) return verdict('threshold');
  const after = input.lastCompactionTokensAfter;
  if (
    after !== undefined &&
    after !== null &&
    crossesThreshold(after - pinned, thresholdPoint) &&
    littleSince(after)
  )
    return verdict('ineffective-compaction');
  // A compaction that failed or found nothing to compact would fail the same way on the next
  // append: wait until the session grew by the same share (from the threshold when it failed
  // before measuring its size).
  if (unsuccessful && littleSince(unsuccessful.tokensBefore)) return verdict('last-compaction-unsuccessful');
  return verdict('threshold');
}

/**
 * {@link evaluateTriggerFromStats} on a context view (the messages in hand): the same decision,
 * with the numbers taken from the messages by {@link triggerStatsOf}.
 */
export function evaluateTrigger(input: TriggerInput): TriggerVerdict {
  return evaluateTriggerFromStats(triggerStatsOf(input));
}
