import { PolicyError, type ModelInfo, type Policy, type PolicyInput } from '@compactor/core';
import { resolveStoredPolicy } from './stored-policy';
import { sessionModel, type ClaimedCompaction, type CompactionRow, type SessionRow } from '@compactor/db';
import { CompactionFailedError } from './errors';

/** One attempt at one compaction: the claimed row, its fence and the session it compacts. */
export interface Attempt {
  compaction: CompactionRow;
  /** Writes are fenced with it: a superseded attempt writes nothing. */
  fence: number;
  session: SessionRow;
  policy: Policy;
  model: ModelInfo;
  /** The session's latest completed compaction as the claim read it. */
  latestCompleted: CompactionRow | null;
  /** The last seq this compaction covers, fixed on its first attempt. */
  coversThroughSeq: number;
  /**
   * True once it is known that no prune step of this compaction marked an output (its first
   * attempt, whose prune step had nothing to do): finalize then has no marks of its own to flag
   * for recall. Unset: one may have.
   */
  noOwnPruneMarks?: boolean;
  /** Exact token counts of texts this attempt counted (steps/finalize.ts `tokenizerFor`), by text. */
  textTokens?: Map<string, number>;
  /** The queue's last try: transient failures end the compaction (or its fallback) instead of retrying. */
  lastAttempt: boolean;
  signal?: AbortSignal | undefined;
}

/**
 * The attempt for a claimed row: policy resolved from the session's stored input, model from
 * its row. A stored policy that no longer resolves (a preset or knob removed since it was
 * saved) fails the compaction with `invalid_policy` instead of leaving it running.
 */
export function attemptFor(
  { compaction, session, latestCompleted }: ClaimedCompaction,
  options: { lastAttempt: boolean; signal?: AbortSignal | undefined },
): Attempt {
  return {
    compaction,
    fence: compaction.fence,
    session,
    latestCompleted,
    policy: storedPolicy(session),
    model: sessionModel(session),
    coversThroughSeq: compaction.coversThroughSeq ?? session.lastSeq,
    lastAttempt: options.lastAttempt,
    signal: options.signal,
  };
}

function storedPolicy(session: SessionRow): Policy {
  try {
    return resolveStoredPolicy(session.policy as PolicyInput);
  } catch (error) {
    if (error instanceof PolicyError) {
      throw new CompactionFailedError(
        'invalid_policy',
        `the session's stored policy no longer resolves: ${error.message}`,
      );
    }
    throw error;
  }
}
