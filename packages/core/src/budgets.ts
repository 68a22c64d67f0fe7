/**
 * The budgets every compaction divides the window into, derived from the window so that small
 * models (4k, 8k: local vLLM and Ollama) compact as well as large ones:
 *
 *   usable  = inputLimit, or window − min(maxOutput, 32,000, window / 4)      (trigger-threshold.ts)
 *   summary = min(policy.summarizer.maxOutputTokens, usable × 0.2)
 *   keep    ≤ min(usable, threshold) − summary                               (cut-point.ts)
 *
 * The summary's budget is what the summarizer may write (`max_tokens`) and what a compaction
 * reserves for it: with a fixed 8,192 an 8k model had no room left for anything it keeps. The
 * keep budget stays under the trigger's point minus the summary, so the context a compaction
 * leaves does not cross the threshold again at once (a 4,096 keep floor on a 4k window kept
 * more than the trigger allowed). Large windows never reach these bounds: the presets keep
 * their reference systems' numbers there (docs/PRESETS.md).
 */
import type { ModelInfo } from './model';
import type { Policy } from './policy';
import { compactionThreshold, usableTokens } from './triggers';

/** The summary may take at most this share of the usable input. */
export const SUMMARY_MAX_USABLE_SHARE = 0.2;

/**
 * A compaction that clamps leaves at most this share of the usable input: the rest is room for
 * the next turn (a question and its answer), so the session does not overflow on the next append.
 */
export const COMPACTED_MAX_USABLE_SHARE = 0.8;

/**
 * The most tokens a summary may take: the policy's `summarizer.maxOutputTokens`, bounded by
 * {@link SUMMARY_MAX_USABLE_SHARE} of the session's usable input (at least 1). An unlimited
 * window keeps the policy's number.
 */
export function summaryBudgetTokens(
  model: ModelInfo,
  policy: Pick<Policy, 'trigger' | 'summarizer'>,
): number {
  const usable = usableTokens(model, policy);
  const configured = policy.summarizer.maxOutputTokens;
  if (usable === null || usable <= 0) return configured;
  return Math.max(1, Math.min(configured, Math.floor(usable * SUMMARY_MAX_USABLE_SHARE)));
}

/**
 * The point a compaction must leave the context well below: the trigger's threshold when it is
 * under the usable input (Opal's 80 %, klaude-code's reserve, a fixed count), else the usable
 * input. `null` for an unlimited window with a window-based trigger.
 */
export function compactionTargetTokens(model: ModelInfo, policy: Pick<Policy, 'trigger'>): number | null {
  const usable = usableTokens(model, policy);
  const threshold = compactionThreshold(model, policy)?.tokens ?? null;
  if (usable === null) return threshold === null ? null : Math.floor(threshold);
  return Math.floor(threshold === null ? usable : Math.min(usable, threshold));
}

/**
 * The most a keep budget may keep (see the module comment): what the trigger leaves after the
 * summary. `null` when there is no such bound (an unlimited window with a window-based trigger)
 * or no room at all.
 */
export function keepCeilingTokens(
  model: ModelInfo,
  policy: Pick<Policy, 'trigger' | 'summarizer'>,
): number | null {
  const target = compactionTargetTokens(model, policy);
  if (target === null) return null;
  const room = target - summaryBudgetTokens(model, policy);
  return room > 0 ? room : null;
}

/**
 * Whether the pinned system messages alone take more than the model accepts: the one case no
 * compaction can make fit (they are never compacted). The session status reports it.
 */
export function pinnedExceedsUsable(
  pinnedTokens: number,
  model: ModelInfo,
  policy: Pick<Policy, 'trigger'>,
): boolean {
  const usable = usableTokens(model, policy);
  return usable !== null && usable > 0 && pinnedTokens > usable;
}
