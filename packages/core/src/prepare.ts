import type { CompactionReason, CompactionStrategy } from './model';
import type { Policy } from './policy';
import type { TriggerVerdict } from './triggers';

/**
 * Prepared-ahead compactions (policy `prepare`). Once the context reaches the soft threshold,
 * `atRatio` × the trigger's point, a worker summarises the history up to a planned cut and keeps
 * it as a draft without changing the context; the compaction the trigger starts later finalizes
 * that draft instead of calling the summarizer, when the draft still covers a prefix of the
 * view. These are the two decisions, as pure functions: when to prepare, and whether a draft
 * still serves.
 */

/** The soft threshold in the trigger's measure (tokens, or history tokens for a `tokens` trigger). */
export function prepareThresholdTokens(
  policy: Pick<Policy, 'prepare'>,
  triggerTokens: number | null,
): number | null {
  if (policy.prepare === null || triggerTokens === null) return null;
  return policy.prepare.atRatio * triggerTokens;
}

/**
 * Whether the session is past its soft threshold and a draft would help: `prepare` is on, the
 * strategy calls the summarizer (truncate needs no LLM, topic mode decides its own cut), and
 * the trigger was evaluated (no compaction is active: `verdict` null) and held only because the
 * session is below its point — not because auto is off, a compaction just ran, or nothing was
 * appended. The caller makes this fire once per crossing: one draft per session and boundary.
 */
export function shouldPrepare(input: {
  verdict: TriggerVerdict | null;
  /** Tokens of pinned system messages in the verdict's `tokens`. */
  pinnedTokens: number;
  policy: Pick<Policy, 'prepare' | 'strategy' | 'trigger'>;
}): boolean {
  const { verdict, policy } = input;
  if (verdict === null || policy.prepare === null || policy.strategy !== 'summarize') return false;
  if (verdict.reason !== 'below-threshold') return false;
  const soft = prepareThresholdTokens(policy, verdict.threshold);
  if (soft === null) return false;
  return measuredTokens({ ...input, verdict }) >= soft;
}

/** The count the trigger compares with its threshold: a `tokens` trigger counts history only. */
function measuredTokens(input: {
  verdict: TriggerVerdict;
  pinnedTokens: number;
  policy: Pick<Policy, 'trigger'>;
}): number {
  // Pinned system messages are not in a `tokens` trigger's count (triggers.ts).
  const pinned = input.policy.trigger.kind === 'tokens' ? input.pinnedTokens : 0;
  return input.verdict.tokens - pinned;
}

/**
 * How far the session still is from its trigger when a draft is requested: the tokens it can
 * grow by before the compaction that will use the draft starts (0 when the threshold is unknown
 * or already reached).
 */
export function prepareHeadroomTokens(input: {
  verdict: TriggerVerdict;
  pinnedTokens: number;
  policy: Pick<Policy, 'trigger'>;
}): number {
  const { threshold } = input.verdict;
  if (threshold === null) return 0;
  return Math.max(0, Math.floor(threshold - measuredTokens(input)));
}

/**
 * The recent tokens a draft keeps after its cut. The draft serves the compaction at the trigger,
 * and everything appended until then is kept verbatim after its cut as well; so the draft plans
 * for that moment: it keeps the compaction's budget less the headroom it was requested with, and
 * the compaction that finalizes it keeps about its budget, as one that summarises would. Planning
 * with the whole budget left the trigger's compaction keeping budget + headroom, and the next
 * trigger came that much sooner (a compaction more per session, each a prompt-cache rewrite).
 * Never below the policy's floor `minTokens`.
 */
export function draftKeepRecentTokens(
  keepRecentTokens: number,
  headroomTokens: number,
  minTokens: number,
): number {
  const planned = keepRecentTokens - Math.max(0, headroomTokens);
  return Math.max(Math.min(minTokens, keepRecentTokens), planned, 0);
}

/** A draft as stored: what it was built on and where it cuts. */
export interface PreparedDraftFacts {
  /** The session's latest completed compaction when the draft read the view (`null`: none). */
  baseCompactionId: string | null;
  /** The first seq the draft keeps: its summary covers the view before it. */
  cutSeq: number;
  /** The lowest seq changed (a PATCH) since the draft began reading the view, if any. */
  changedSeq: number | null;
  /** The session's policy input and model when the draft was written (workflow `preparedSettingsKey`). */
  settingsKey: string;
}

/** The compaction about to use a draft, and the view it works on. */
export interface DraftUseFacts {
  latestCompletedId: string | null;
  settingsKey: string;
  reason: CompactionReason;
  strategy: CompactionStrategy;
  force: boolean;
  instructions: string | null;
  keepRecentTokens: number | null;
  /** The last seq the compaction covers. */
  coversThroughSeq: number;
  /** The first message of the view that no summary covers and is not pinned, if any. */
  firstUnsummarizedSeq: number | null;
}

export type DraftVerdict =
  | { usable: true }
  | {
      usable: false;
      reason:
        'request-differs' | 'settings-changed' | 'boundary-moved' | 'message-changed' | 'cut-outside-view';
    };

/**
 * Whether a draft still covers a prefix of the view the compaction works on: it was written for
 * the compaction the trigger starts (auto, not forced, no instructions or keep budget of its
 * own), with the session's policy and model as they are now; the boundary has not moved since
 * (the same latest completed compaction, so the same previous summary was merged); no message
 * before its cut changed since it read them; and its cut still lies inside the view, after the
 * first message it summarises and no further than the compaction covers.
 */
export function preparedDraftUsable(draft: PreparedDraftFacts, now: DraftUseFacts): DraftVerdict {
  const unusable = (reason: Extract<DraftVerdict, { usable: false }>['reason']): DraftVerdict => ({
    usable: false,
    reason,
  });
  if (!draftServesRequest(now)) return unusable('request-differs');
  if (draft.settingsKey !== now.settingsKey) return unusable('settings-changed');
  if (draft.baseCompactionId !== now.latestCompletedId) return unusable('boundary-moved');
  if (draft.changedSeq !== null && draft.changedSeq < draft.cutSeq) return unusable('message-changed');
  if (
    now.firstUnsummarizedSeq === null ||
    draft.cutSeq <= now.firstUnsummarizedSeq ||
    draft.cutSeq > now.coversThroughSeq + 1
  )
    return unusable('cut-outside-view');
  return { usable: true };
}

/**
 * Whether a draft was written for this compaction's request: the one the trigger starts (auto,
 * summarize, not forced, no instructions or keep budget of its own). Known before the draft is:
 * a compaction that could never use a draft does not wait for one being written.
 */
export function draftServesRequest(
  now: Pick<DraftUseFacts, 'reason' | 'strategy' | 'force' | 'instructions' | 'keepRecentTokens'>,
): boolean {
  return (
    now.reason === 'auto' &&
    now.strategy === 'summarize' &&
    !now.force &&
    now.instructions === null &&
    now.keepRecentTokens === null
  );
}
