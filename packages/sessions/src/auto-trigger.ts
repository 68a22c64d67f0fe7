import {
  evaluateTriggerFromStats,
  prepareHeadroomTokens,
  pruneCouldSelect,
  shouldPrepare,
  type TriggerVerdict,
} from '@compactor/core';
import { safeErrorMessage, type CompactionRow, type SessionRow } from '@compactor/db';
import type { OperationLog, SessionResources } from './resources';
import type { SessionStatus as StatusView, TurnPruneView } from '@compactor/contract';
import { statusSnapshot, type PrefetchedStatus, type StatusSnapshot } from './status';
import type { TenantLimits } from './tenant-limits';
import { turnPrune } from './turn-prune';
import { compactionView } from './views';

export interface AfterWrite {
  /** The session's status after the write (showing the compaction it started, if any). */
  status: StatusView;
  /** The compaction this write started, if any. */
  compaction: CompactionRow | null;
  /** The prune job this write queued, or the prune that waited for the prompt cache, if any. */
  prune: TurnPruneView;
  verdict: TriggerVerdict | null;
  /**
   * The snapshot the status was read from, when it still describes the session as the write
   * left it: the write started no compaction (a started one is active now, which it does not show).
   */
  unchanged: StatusSnapshot | null;
}

/**
 * After messages were appended or a turn was finished: the status, the auto trigger on the same
 * numbers (core `evaluateTriggerFromStats` over db `contextTokenStats`: the history is never
 * loaded), and the per-turn prune when it could prune anything. Starting work is best effort here: the messages are
 * committed, and a failure to start a compaction or a prune is logged, never the request's
 * failure (the next append evaluates the trigger again; the outbox covers enqueue failures). A
 * compaction the tenant's cap on active compactions holds back waits its turn (metrics count
 * it): recorded in Postgres, it starts when one of the tenant's compactions ends.
 * `prefetched`: the status inputs the append read in its round trip (see `statusSnapshot`).
 */
export async function afterWrite(
  resources: SessionResources,
  limits: TenantLimits,
  session: SessionRow,
  {
    finishedTurn,
    log,
    prefetched,
  }: { finishedTurn: boolean; log: OperationLog; prefetched?: PrefetchedStatus },
): Promise<AfterWrite> {
  const snapshot = await statusSnapshot(resources.db, session, prefetched);
  const lastCompleted = snapshot.latestCompleted;
  const { stats, policy, model } = snapshot;
  let status = snapshot.status;
  let compaction: CompactionRow | null = null;
  let verdict: TriggerVerdict | null = null;

  if (!snapshot.active) {
    verdict = evaluateTriggerFromStats({
      tokens: status.tokens,
      report: stats.report,
      newestSeq: stats.newestSeq,
      newestIsSummary: stats.newestIsSummary,
      // A tokens trigger counts history: pinned system messages are left out.
      pinnedTokens: stats.pinnedTokens,
      lastCompactionSeq: lastCompleted?.coversThroughSeq ?? null,
      lastCompactionTokensAfter: lastCompleted?.tokensAfter ?? null,
      // A newer failed or skipped compaction may hold the trigger until the session grew (no loop).
      lastUnsuccessful:
        snapshot.lastFinished && snapshot.lastFinished.status !== 'completed'
          ? { tokensBefore: snapshot.lastFinished.tokensBefore, errorCode: snapshot.lastFinished.errorCode }
          : null,
      model,
      policy,
    });
    if (verdict.compact && verdict.compactionReason) {
      const reason = verdict.compactionReason;
      try {
        // Past the tenant's cap it waits its turn (`null`): the status shows no active
        // compaction until a worker starts it.
        const started = await limits.autoCompaction((caps) =>
          resources.jobs.startCompaction(session, { reason }, caps),
        );
        // Created by a racing request instead: that one reports it; this append shows it in status.
        if (started?.created) compaction = started.compaction;
        if (started) status = { ...status, activeCompaction: compactionView(started.compaction, session.id) };
      } catch (error) {
        log.warn(
          { sessionId: session.id, reason: verdict.reason, err: safeErrorMessage(error) },
          'auto compaction could not be started; the next append will try again',
        );
      }
    }
  }

  // Policy `prepare`: past the soft threshold, a summary is written ahead of the trigger, once
  // per crossing (one request per session and boundary: db `requestPreparedSummary`).
  if (
    verdict &&
    compaction === null &&
    shouldPrepare({ verdict, pinnedTokens: stats.pinnedTokens, policy })
  ) {
    const headroomTokens = prepareHeadroomTokens({ verdict, pinnedTokens: stats.pinnedTokens, policy });
    try {
      await resources.jobs.startPrepare(session, lastCompleted?.id ?? null, headroomTokens);
    } catch (error) {
      log.warn(
        { sessionId: session.id, err: safeErrorMessage(error) },
        'prepared summary could not be requested',
      );
    }
  }

  let prune: TurnPruneView = null;
  if (
    finishedTurn &&
    policy.prune &&
    compaction === null &&
    pruneCouldSelect(policy, stats.unprunedOutputs)
  ) {
    // Policy `pruning.cacheAware`: it may wait for the prompt cache (see turnPrune).
    prune = await turnPrune(resources, limits, session, snapshot, verdict, log);
  }
  return { status, compaction, prune, verdict, unchanged: status === snapshot.status ? snapshot : null };
}
