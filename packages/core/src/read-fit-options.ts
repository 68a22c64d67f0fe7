import type { FitCounters } from './fit';
import type { PruneBudgets } from './policy';
import type { TokenMeasure } from './token-measure';

/** What {@link fitViewForRead} needs besides the view. */
export interface ReadFitOptions {
  /** The most the served messages may count (stored counts): the usable input minus the overhead. */
  budgetTokens: number;
  /** The policy's prune budgets, or `null` when the policy does not prune. */
  pruning: PruneBudgets | null;
  /** How the prune selection sizes outputs (`tokenMeasureFor(policy.tokenCount)`). */
  measure?: TokenMeasure;
  /** The policy's `pinSystemMessages`: pinned system messages are never cleared, clamped or dropped. */
  pinSystemMessages: boolean;
  /** The summary's budget, which bounds the marker's pinned section as it bounds the truncate text's. */
  markerBudgetTokens: number;
  /** ISO time the cleared outputs are marked with (core takes no clock). */
  at: string;
  count: FitCounters;
}
