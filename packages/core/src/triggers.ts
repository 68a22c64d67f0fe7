/**
 * When to compact automatically, and the session status the API shows.
 *
 * Four threshold kinds (policy `trigger`): OpenCode's overflow against the usable input, Opal's
 * 80 % of the window, klaude-code's reserve, the topic reference's fixed token count. Besides the threshold,
 * a provider that silently accepted an oversized prompt (Opal's `usage_overflow?`) triggers an
 * emergency compaction. Loop guards keep compaction from re-firing right after itself.
 */
import type { CompactionReason, Finish, Message, ModelInfo, Usage } from './model';
import { isContinuationMessage } from './continuation';
import { assertNever } from './model';
import { TRIGGER_DEFAULTS, type Policy, type Trigger, type TriggerKind } from './policy';
import {
  estimateContextTokens,
  latestSummarySeq,
  latestUsageReport,
  promptTokens,
  reportedContextTokens,
  storedTokens,
} from './tokens';
import { usageCalibrationCap } from './estimate-bounds';
import { isPinnedMessage } from './context';

/**
 * The output reserve never takes more than this share of the window. OpenCode reserves
 * `min(maxOutput, 32000)`, which is the whole window for a model whose output limit equals its
 * window (gpt-4: 8192 / 8192): usable 0, and every append would compact.
 */
export const OUTPUT_RESERVE_MAX_SHARE = 0.25;

/**
 * Tokens kept free for the answer: `min(maxOutput || cap, cap, floor(window / 4))`. OpenCode's
 * `min(maxOutput, cap) || cap` (a model that declares no output limit, 0, still reserves the
 * cap), bounded by {@link OUTPUT_RESERVE_MAX_SHARE} of the window so the prompt always keeps
 * three quarters of it. Sane models keep OpenCode's numbers (gpt-4o: 16,384; Claude: 32,000).
 */
export function outputReserve(
  model: ModelInfo,
  cap: number = TRIGGER_DEFAULTS.overflow.outputReserveCap,
): number {
  const declared = model.maxOutputTokens || cap;
  return Math.max(
    0,
    Math.min(declared, cap, Math.floor(Math.max(0, model.contextWindow) * OUTPUT_RESERVE_MAX_SHARE)),
  );
}

/**
 * How many prompt tokens the model accepts (OpenCode): its input limit when it has one, else the
 * window minus the {@link outputReserve} — minus klaude-code's own reserve with the `reserve`
 * trigger, whose point this then is. `null` for an unlimited window (0), which never
 * overflows. Callers treat a result `<= 0` (only possible from a bad input limit) as "no room":
 * nothing fires on it.
 */
export function usableTokens(model: ModelInfo, policy: Pick<Policy, 'trigger'>): number | null {
  if (model.contextWindow <= 0) return null;
  if (model.inputLimit) return model.inputLimit;
  // klaude-code keeps its reserve free for the answer: its prompt may take the rest.
  if (policy.trigger.kind === 'reserve')
    return Math.max(0, model.contextWindow - reserveTokens(policy.trigger, model.contextWindow));
  const cap =
    policy.trigger.kind === 'overflow'
      ? policy.trigger.outputReserveCap
      : TRIGGER_DEFAULTS.overflow.outputReserveCap;
  return Math.max(0, model.contextWindow - outputReserve(model, cap));
}

/** klaude-code's reserve: `min(reserveTokens, max(minReserveTokens, floor(reserveRatio × window)))`. */
export function reserveTokens(trigger: Extract<Trigger, { kind: 'reserve' }>, contextWindow: number): number {
  const proportional = Math.max(trigger.minReserveTokens, Math.floor(contextWindow * trigger.reserveRatio));
  return Math.min(trigger.reserveTokens, proportional);
}

/** The point at which a trigger fires: above `tokens`, or at it too when `inclusive`. */
export interface Threshold {
  tokens: number;
  inclusive: boolean;
}

/**
 * The trigger's threshold for this model, or `null` when it can never fire: an unlimited window,
 * or a window-based threshold of 0 or less (a window smaller than klaude-code's 2048 reserve
 * floor, a bad input limit), which would otherwise fire on every append. The fixed `tokens`
 * trigger needs no window and always fires.
 */
export function compactionThreshold(model: ModelInfo, policy: Pick<Policy, 'trigger'>): Threshold | null {
  const trigger = policy.trigger;
  if (trigger.kind === 'tokens') return { tokens: trigger.tokens, inclusive: false };
  if (model.contextWindow <= 0) return null;
  let threshold: Threshold;
  switch (trigger.kind) {
    case 'overflow':
      threshold = { tokens: usableTokens(model, policy) ?? 0, inclusive: false };
      break;
    case 'ratio':
      threshold = { tokens: trigger.ratio * model.contextWindow, inclusive: true };
      break;
    case 'reserve':
      threshold = {
        tokens: model.contextWindow - reserveTokens(trigger, model.contextWindow),
        inclusive: false,
      };
      break;
    default:
      return assertNever(trigger, 'trigger');
  }
  return threshold.tokens > 0 ? threshold : null;
}

/** Whether `tokens` crosses `threshold`. */
export function crossesThreshold(tokens: number, threshold: Threshold): boolean {
  return threshold.inclusive ? tokens >= threshold.tokens : tokens > threshold.tokens;
}

/**
 * OpenCode's `isOverflow` on one usage report: `input + cache.read + output > usable`, never when
 * `auto` is off, the window is unlimited or there is no usable room. `output` is taken without
 * its reasoning (model.ts `Usage`; OpenCode stores reasoning apart from output). The hybrid
 * estimate also counts cache writes.
 */
export function isOverflow(
  usage: Usage,
  model: ModelInfo,
  policy: Pick<Policy, 'auto' | 'trigger'>,
): boolean {
  if (!policy.auto) return false;
  const usable = usableTokens(model, policy);
  if (usable === null || usable <= 0) return false;
  return reportedContextTokens(usage) - usage.cacheWrite > usable;
}

/**
 * A silent overflow: the provider answered but the prompt it reports is larger than the window
 * (Opal `usage_overflow?`: reported input > window), or it stopped for length with no output and
 * a full window (pi: a server that truncated the prompt to fit). Unlimited windows never overflow.
 */
export function detectUsageOverflow(usage: Usage, model: ModelInfo, finish: Finish | null = null): boolean {
  if (model.contextWindow <= 0) return false;
  const prompt = promptTokens(usage);
  if (prompt > model.contextWindow) return true;
  return finish === 'length' && usage.output === 0 && prompt >= model.contextWindow * 0.99;
}

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

/** The newest finished compaction of a session when it failed or was skipped. */
export interface UnsuccessfulCompaction {
  /** The view's size when it started; `null` when it failed before measuring. */
  tokensBefore: number | null;
  /** Its code (`nothing_to_compact` when skipped); {@link CONTEXT_CANNOT_FIT} holds even over the window. */
  errorCode?: string | null;
}

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
  const { tokens } = estimateContextTokens(input.messages, {
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
