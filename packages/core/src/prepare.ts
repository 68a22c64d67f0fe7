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
  // A `tokens` trigger counts history: pinned system messages are not in it (triggers.ts).
  const measured = verdict.tokens - (policy.trigger.kind === 'tokens' ? input.pinnedTokens : 0);
  return measured >= soft;
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
  if (
    now.reason !== 'auto' ||
    now.strategy !== 'summarize' ||
    now.force ||
    now.instructions !== null ||
    now.keepRecentTokens !== null
  )
    return unusable('request-differs');
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
