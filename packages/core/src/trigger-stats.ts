/**
 * The numbers the trigger decides on ({@link TriggerStats}: summed in SQL, or taken from a context
 * view by {@link triggerStatsOf}) and the session status the API shows from them.
 */
import type { Finish, Message, ModelInfo, Usage } from './model';
import { isContinuationMessage } from './continuation';
import type { Policy } from './policy';
import { estimateContextTokens, latestSummarySeq, latestUsageReport, storedTokens } from './tokens';
import { usageCalibrationCap } from './estimate-bounds';
import { isPinnedMessage } from './context';
import { compactionThreshold, detectUsageOverflow, usableTokens } from './trigger-threshold';
import { applyMediaBudget, type MediaBudget } from './media/budget';

/** The session status the API shows: `tokens`, `usable`, `percent`, `triggerTokens`, `overflow`. */
export interface SessionStatus {
  /** Estimated size of the context view (see `estimateContextTokens`). */
  tokens: number;
  /** Prompt tokens the model accepts; `null` for an unlimited window. */
  usable: number | null;
  /**
   * How close automatic compaction is, in percent, one decimal: `tokens / usable`; for a `tokens`
   * trigger (a fixed count of history, the topic preset), the history (`tokens` without pinned
   * system messages) over `triggerTokens`. `null` when there is nothing to measure against.
   */
  percent: number | null;
  /**
   * The trigger's threshold in tokens: automatic compaction fires once the count it measures is
   * above it (the ratio trigger: at it). `tokens` for the overflow, ratio and reserve triggers;
   * the history without pinned system messages for a `tokens` trigger. `null` for an unlimited
   * window.
   */
  triggerTokens: number | null;
  /** The context no longer fits: tokens above usable, or the latest report was a silent overflow. */
  overflow: boolean;
}

/** What the trigger checks need about a session: its context view, model and policy switches. */
export interface TriggerInput {
  /** The session's context view: the latest summary first, then the kept and newer messages. */
  messages: readonly Message[];
  model: ModelInfo;
  policy: Pick<Policy, 'auto' | 'trigger' | 'estimate'>;
  /**
   * The highest seq the latest completed compaction covered or wrote. Defaults to the newest
   * summary message's seq; pass it when the compaction wrote none (topic truncate-only).
   */
  lastCompactionSeq?: number | null;
  /**
   * The size of the context view the latest completed compaction left (the compaction row's
   * `tokensAfter`), for the `ineffective-compaction` guard. Omit it (or `null`) to skip the guard.
   */
  lastCompactionTokensAfter?: number | null;
  /** See {@link TriggerStats.lastUnsuccessful}. */
  lastUnsuccessful?: UnsuccessfulCompaction | null;
  /** Leave pinned system messages out of a `tokens` trigger's count (policy `pinSystemMessages`). */
  pinSystemMessages?: boolean;
  /**
   * The session's media budget (`mediaBudgetOf(policy, usable)`): the view is counted as it is
   * served, its images past the budget as their markers (what db `contextTokenStats` and the
   * status do with `mediaBudgetSavings`). Omitted: every image counts in full.
   */
  media?: MediaBudget;
}

function percentOf(tokens: number, usable: number | null): number | null {
  if (usable === null || usable <= 0) return null;
  return Math.round((tokens / usable) * 1000) / 10;
}

/**
 * Status from an estimate already made (e.g. summed in SQL): `overflow` when the tokens exceed
 * the usable input or the newest usable report was a silent overflow.
 */
export function statusFromEstimate(input: {
  tokens: number;
  /** The newest usable usage report, with the finish of its turn. */
  report: { usage: Usage; finish: Finish | null } | null;
  /** Tokens of pinned system messages in `tokens` (see {@link TriggerStats.pinnedTokens}); default 0. */
  pinnedTokens?: number;
  model: ModelInfo;
  policy: Pick<Policy, 'trigger'>;
}): SessionStatus {
  const usable = usableTokens(input.model, input.policy);
  const silent =
    input.report !== null && detectUsageOverflow(input.report.usage, input.model, input.report.finish);
  const threshold = compactionThreshold(input.model, input.policy);
  const triggerTokens = threshold === null ? null : Math.ceil(threshold.tokens);
  const byHistory = input.policy.trigger.kind === 'tokens';
  return {
    tokens: input.tokens,
    usable,
    percent: byHistory
      ? percentOf(input.tokens - (input.pinnedTokens ?? 0), triggerTokens)
      : percentOf(input.tokens, usable),
    triggerTokens,
    overflow: (usable !== null && usable > 0 && input.tokens > usable) || silent,
  };
}

/** Status of a session's context: what `GET /sessions/:id` reports. */
export function sessionStatus(input: TriggerInput): SessionStatus {
  return statusFromEstimate(triggerStatsOf(input));
}
/** The newest finished compaction of a session when it failed or was skipped. */
export interface UnsuccessfulCompaction {
  /** The view's size when it started; `null` when it failed before measuring. */
  tokensBefore: number | null;
  /** Its code (`nothing_to_compact` when skipped); `CONTEXT_CANNOT_FIT` (triggers.ts) holds even over the window. */
  errorCode?: string | null;
}

/** The newest message by seq (the view lists the summary before older kept messages). */
function newestMessage(messages: readonly Message[]): Message | null {
  let newest: Message | null = null;
  for (const message of messages) if (newest === null || message.seq > newest.seq) newest = message;
  return newest;
}

/**
 * What the trigger decides on, computed elsewhere: in SQL by db `contextTokenStats` +
 * `estimateFromStats` and the latest completed compaction row, so the append path never loads
 * the history. {@link triggerStatsOf} derives the same numbers from a context view.
 */
export interface TriggerStats {
  /** The estimate of the context view (hybrid or stored, per the policy's `estimate`). */
  tokens: number;
  /**
   * The newest usable usage report after the last compaction (see `latestUsageReport`), with
   * the finish of its turn; `null` for none. Checked for a silent overflow.
   */
  report: { usage: Usage; finish: Finish | null } | null;
  /** Seq of the newest message of the view; `null` for an empty view. */
  newestSeq: number | null;
  /**
   * Whether the newest message belongs to the last compaction: its summary, or the synthetic
   * continuation a client appends after it (continuation.ts). The `just-compacted` guard.
   */
  newestIsSummary: boolean;
  /**
   * The highest seq the latest completed compaction covered or wrote (its `coversThroughSeq`
   * will do: a summary is always newer), for the `nothing-new` guard; `null` for none.
   */
  lastCompactionSeq?: number | null;
  /** The latest completed compaction's `tokensAfter`, for the `ineffective-compaction` guard. */
  lastCompactionTokensAfter?: number | null;
  /**
   * The newest finished compaction when it did not complete (`failed` or `skipped`), newer than
   * any completed one: its size when it started (`tokensBefore`, `null` if it failed before
   * measuring) and its error code. For the `last-compaction-unsuccessful` and
   * `context-cannot-fit` guards.
   */
  lastUnsuccessful?: UnsuccessfulCompaction | null;
  /**
   * Tokens of the pinned system messages in `tokens` (never compacted). A `tokens` trigger counts
   * history, so it leaves them out: a 5,500-token system prompt must not bring a 6,000 trigger
   * within 500 tokens of firing forever. Default 0.
   */
  pinnedTokens?: number;
  model: ModelInfo;
  policy: Pick<Policy, 'auto' | 'trigger'>;
}

/** The {@link TriggerStats} of a context view: what `contextTokenStats` sums in SQL. */
export function triggerStatsOf(input: TriggerInput): TriggerStats {
  const lastCompactionSeq = input.lastCompactionSeq ?? latestSummarySeq(input.messages);
  const served = input.media ? applyMediaBudget(input.messages, input.media).messages : input.messages;
  const { tokens } = estimateContextTokens(served, {
    mode: input.policy.estimate,
    lastCompactionSeq,
    calibrationCap: usageCalibrationCap(usableTokens(input.model, input.policy)),
  });
  const report = latestUsageReport(input.messages, lastCompactionSeq);
  const newest = newestMessage(input.messages);
  const pinnedTokens = input.pinSystemMessages ? storedTokens(input.messages.filter(isPinnedMessage)) : 0;
  return {
    tokens,
    pinnedTokens,
    report: report && { usage: report.usage, finish: report.message.finish },
    newestSeq: newest?.seq ?? null,
    newestIsSummary: newest !== null && (newest.summary || isContinuationMessage(newest)),
    lastCompactionSeq,
    lastCompactionTokensAfter: input.lastCompactionTokensAfter ?? null,
    lastUnsuccessful: input.lastUnsuccessful ?? null,
    model: input.model,
    policy: input.policy,
  };
}
