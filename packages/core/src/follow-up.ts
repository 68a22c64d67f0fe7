/**
 * Whether a compaction that just completed must be followed by another at once: messages
 * appended while it ran can leave the session over its trigger again (a compaction that
 * brought 11k tokens down while 70k arrived), and the client may append nothing more before
 * its next model call, so waiting for the next append's trigger could leave it stuck.
 */
import type { ModelInfo } from './model';
import type { Policy } from './policy';
import {
  compactionThreshold,
  crossesThreshold,
  evaluateTriggerFromStats,
  usableTokens,
  type TriggerVerdict,
} from './triggers';

/** A completed compaction, measured when it completed. */
export interface CompletedCompaction {
  /**
   * The view's size when it completed (the row's `tokensAfter`): what it kept and wrote, plus
   * what was appended while it ran. Its summaries are the newest messages, so no usage report
   * comes after them and this is the stored sum in either estimate mode.
   */
  tokensAfter: number;
  /** The last seq it covered; everything after it but its own summaries was appended while it ran. */
  coversThroughSeq: number;
  /**
   * Tokens of the pinned system messages in `tokensAfter`: a `tokens` trigger counts history
   * without them (see `TriggerStats.pinnedTokens`). Default 0.
   */
  pinnedTokens?: number;
}

/** What was appended while it ran (after its covered range, its own summaries excluded). */
export interface AppendedWhileRunning {
  /** Their stored tokens, as the view counts them. */
  tokens: number;
  /** The newest one's seq; `null` when nothing was appended. */
  newestSeq: number | null;
}

type FollowUpInput = CompletedCompaction & {
  model: ModelInfo;
  policy: Pick<Policy, 'auto' | 'trigger'>;
};

/**
 * Whether a follow-up is possible at all: `auto` is on and the size it left crosses the
 * threshold or the usable input (a threshold may lie above it). When not, {@link evaluateFollowUp} needs no numbers about what was appended (and
 * the caller reads none).
 */
export function mayFollowUp({
  tokensAfter,
  model,
  policy,
  pinnedTokens = 0,
}: Omit<FollowUpInput, 'coversThroughSeq'>): boolean {
  const threshold = compactionThreshold(model, policy);
  const usable = usableTokens(model, policy);
  const history = policy.trigger.kind === 'tokens' ? tokensAfter - pinnedTokens : tokensAfter;
  const over =
    (threshold !== null && crossesThreshold(history, threshold)) ||
    (usable !== null && usable > 0 && tokensAfter > usable);
  return policy.auto && over;
}

/**
 * The trigger's verdict on the view a compaction left, as the next append would see it if its
 * summaries were not the newest messages: the messages appended while it ran are what is new
 * since it, and its own result (`tokensAfter − appended`) is the size the `ineffective-compaction`
 * guard compares with. So an outrun compaction (its own result below the threshold) is followed
 * by another, one that was itself ineffective is held as the trigger would hold it, and one
 * that leaves the session over its usable window is followed whatever its own result. Nothing
 * appended while it ran: `nothing-new` — a follow-up needs new messages, so follow-ups cannot
 * chain without appends.
 */
export function evaluateFollowUp(input: FollowUpInput & { appended: AppendedWhileRunning }): TriggerVerdict {
  return evaluateTriggerFromStats({
    tokens: input.tokensAfter,
    // Every report is older than its summaries: none says anything about the view it left.
    report: null,
    newestSeq: input.appended.newestSeq ?? input.coversThroughSeq,
    newestIsSummary: false,
    lastCompactionSeq: input.coversThroughSeq,
    lastCompactionTokensAfter: input.tokensAfter - input.appended.tokens,
    lastUnsuccessful: null,
    pinnedTokens: input.pinnedTokens ?? 0,
    model: input.model,
    policy: input.policy,
  });
}
