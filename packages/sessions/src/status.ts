import {
  mediaBudgetOf,
  mediaBudgetSavings,
  pinnedExceedsUsable,
  statusFromEstimate,
  usableTokens,
  usageCalibrationCap,
  type ModelInfo,
  type Policy,
  type PolicyInput,
} from '@compactor/core';
import { resolveStoredPolicy } from '@compactor/workflow';
import {
  estimateFromStats,
  sessionStatusInputs,
  type SessionStatusInputs,
  type CompactionRow,
  type ContextTokenStats,
  type DbOrTx,
  type SessionRow,
  sessionModel,
} from '@compactor/db';
import type { SessionStatus as StatusView } from '@compactor/contract';
import { compactionView } from './views';

/** The status and the numbers behind it (the auto trigger decides on the same numbers). */
export interface StatusSnapshot {
  status: StatusView;
  stats: ContextTokenStats;
  policy: Policy;
  model: ModelInfo;
  active: CompactionRow | null;
  /** The most recently finished compaction, whatever its outcome. */
  lastFinished: CompactionRow | null;
  /** The compaction that defines the context view now. */
  latestCompleted: CompactionRow | null;
  /**
   * Tokens the media budget takes off the view (`policy.media`, at most half the usable input):
   * `status.tokens` counts the view as served, `stats.storedTokens` as stored.
   */
  mediaSavedTokens: number;
}

/**
 * The status inputs of a session read already (in an append's round trip), for the pinning
 * they were read with: they serve only when the session's policy pins the same way.
 */
export interface PrefetchedStatus {
  pinSystemMessages: boolean;
  inputs: SessionStatusInputs;
}

/**
 * A session's status from stored counts and the last reported usage (the hybrid estimate, never
 * below the stored count and at most a capped calibration above it), in a few indexed queries:
 * the history itself is never re-read.
 */
export async function statusSnapshot(
  db: DbOrTx,
  session: SessionRow,
  prefetched?: PrefetchedStatus,
): Promise<StatusSnapshot> {
  const policy = resolveStoredPolicy(session.policy as PolicyInput);
  const model = sessionModel(session);
  const { pinSystemMessages } = policy;
  const {
    stats,
    active,
    lastFinished: last,
    latestCompleted,
  } = prefetched?.pinSystemMessages === pinSystemMessages
    ? prefetched.inputs
    : await sessionStatusInputs(db, session.pk, { pinSystemMessages });
  // A report adds at most a share of the usable input over the exact stored count, never less.
  const usable = usableTokens(model, policy);
  const calibrationCap = usageCalibrationCap(usable);
  // Images past the media budget count as the markers they are served as (core mediaBudgetSavings).
  const media = mediaBudgetOf(policy, usable);
  const mediaSavedTokens = mediaBudgetSavings(stats.images, media).savedTokens;
  const tokens = estimateFromStats(stats, { mode: policy.estimate, calibrationCap, media });
  const status = statusFromEstimate({
    tokens,
    report: stats.report,
    pinnedTokens: stats.pinnedTokens,
    model,
    policy,
  });
  return {
    status: {
      ...status,
      pinnedTokens: stats.pinnedTokens,
      cannotFit: pinnedExceedsUsable(stats.pinnedTokens, model, policy),
      contextWindow: model.contextWindow,
      estimate: stats.report && policy.estimate === 'hybrid' ? 'hybrid' : 'stored',
      calibrationTokens: tokens - (stats.storedTokens - mediaSavedTokens),
      contextMessages: stats.contextMessages,
      messagesSinceCompaction: stats.messagesSinceCompaction,
      activeCompaction: active ? compactionView(active, session.id) : null,
      lastCompaction: last ? compactionView(last, session.id) : null,
    },
    stats,
    policy,
    model,
    active,
    lastFinished: last,
    latestCompleted,
    mediaSavedTokens,
  };
}

/** A session's status (see {@link statusSnapshot}). */
export async function sessionStatus(db: DbOrTx, session: SessionRow): Promise<StatusView> {
  return (await statusSnapshot(db, session)).status;
}
