import {
  DEFAULT_POLICY,
  mediaBudgetOf,
  usableTokens,
  usageCalibrationCap,
  type UnprunedOutputs,
} from '@compactor/core';
import {
  CoveredMessageChangedError,
  StaleAttemptError,
  claimCompaction,
  contextTokenStats,
  estimateFromStats,
  type ContextTokenStats,
  updateRunningCompaction,
  type CompactionRow,
  type SessionRow,
  type StepPatch,
} from '@compactor/db';
import { announceEvent, type CompactionEventType, type SessionEventMap } from './session-events';
import { attemptFor, type Attempt } from './attempt';
import { safeErrorMessage } from '@compactor/db';
import { CompactionFailedError, shouldRethrow } from './errors';
import type { WorkflowResources } from './resources';
import { announceCompletion } from './announce-completion';
import { StepTrail, type Announce } from './step-trail';
import { finalizeStep, type Finalized } from './steps/finalize';
import { prunePassed, pruneStep } from './steps/prune';
import { summarizeStep } from './steps/summarize';
import {
  parseSummaryDraft,
  toSummaryDraft,
  type SummarizeOutcome,
  type SummaryOutcome,
} from './steps/summary-writing';

/** How the queue runs this attempt: whether it is the last try, and the job's cancellation signal. */
export interface RunOptions {
  /**
   * The queue's last try: transient failures end the compaction (or its fallback) instead of
   * being rethrown. The caller computes it from the job's attempts; nothing defaults it.
   */
  lastAttempt: boolean;
  signal?: AbortSignal | undefined;
}

/** How an attempt ended; transient failures are thrown instead, unless it was the last attempt. */
export type RunOutcome =
  | {
      status: 'completed' | 'skipped' | 'failed';
      compaction: CompactionRow;
      /** Completed only: the compaction requested with its completion, when appends outran it. */
      followUp?: CompactionRow | null;
    }
  /** Not active any more (finished, or superseded by a newer attempt): nothing was written. */
  | { status: 'inactive' | 'stale'; compaction: CompactionRow | null };

/**
 * Runs one attempt of a compaction: claim (new fence, covered range fixed on the first attempt)
 * → prune → summarize → save the summary draft → finalize, each step recorded and announced.
 * Transient failures are rethrown for the queue to retry unless this is the last attempt;
 * everything else ends the compaction as `failed` (or `skipped` when there is nothing to
 * compact). Safe to run again after a crash: every step is idempotent, every write is fenced,
 * and a summary the LLM already wrote is finalized from its draft without calling it again.
 */
export async function runCompaction(
  resources: WorkflowResources,
  compactionId: string,
  options: RunOptions,
): Promise<RunOutcome> {
  // The view's size comes with the claim, measured as the default policy pins system messages;
  // a policy that does not pin them reads it again (sizeBefore).
  const claimed = await claimCompaction(resources.db, compactionId, resources.clock(), {
    stats: { pinSystemMessages: DEFAULT_POLICY.pinSystemMessages },
  });
  if (!claimed) return { status: 'inactive', compaction: null };
  const { compaction, session } = claimed;
  const owner = { compaction, fence: compaction.fence, session };
  const announce: Announce = (type, data) => publish(resources, session, compactionId, type, data);
  // Which session a log line is about, as its client and tenant know it (never message text).
  const ids = { sessionId: session.id, tenantId: session.tenantId };

  try {
    const attempt = attemptFor(claimed, options);
    const trail = new StepTrail(resources, attempt, announce);
    announce('compaction.started', { attempt: compaction.attempts, reason: compaction.reason });
    const outcome = await runSteps(resources, attempt, trail, claimed.stats);
    const finalized = await finalizeOrReplan(resources, attempt, trail, outcome);
    if (finalized.kind === 'nothing-to-compact') {
      await trail.close();
      const skipped = await end(resources, owner, 'skipped', 'nothing_to_compact', finalized.reason);
      announce('compaction.skipped', { reason: finalized.reason });
      return { status: 'skipped', compaction: skipped };
    }
    await announceCompletion(resources, attempt, announce, finalized);
    const { completed, followUp } = finalized;
    return { status: 'completed', compaction: completed, followUp: followUp?.compaction ?? null };
  } catch (error) {
    if (error instanceof StaleAttemptError) return { status: 'stale', compaction: null };
    if (shouldRethrow(error, options)) throw error;
    const failure =
      error instanceof CompactionFailedError
        ? error
        : new CompactionFailedError(
            error instanceof CoveredMessageChangedError ? 'covered_messages_changed' : 'internal_error',
            safeErrorMessage(error),
          );
    resources.log.warn(
      { compactionId, ...ids, code: failure.code, err: failure.message },
      'compaction failed',
    );
    try {
      const failed = await end(resources, owner, 'failed', failure.code, failure.message);
      announce('compaction.failed', { status: 'failed', error: { code: failure.code } });
      return { status: 'failed', compaction: failed };
    } catch (endError) {
      if (endError instanceof StaleAttemptError) return { status: 'stale', compaction: null };
      throw endError;
    }
  }
}

/**
 * prune → summarize (one statement for both when the prune has nothing to do), then finalize is entered with the summary saved as the row's draft in the
 * same statement: an attempt that finds a draft (an earlier one paid for the summary, then
 * crashed or failed to finalize) goes straight to finalize. Returns with the finalize step
 * entered, or with `nothing-to-compact` and the summarize step still open.
 */
async function runSteps(
  resources: WorkflowResources,
  attempt: Attempt,
  trail: StepTrail,
  claimedStats: ContextTokenStats | undefined,
): Promise<SummaryOutcome | { kind: 'nothing-to-compact'; reason: string }> {
  const draft = parseSummaryDraft(attempt.compaction.summaryDraft);
  if (draft) {
    resources.log.info({ compactionId: attempt.compaction.id }, 'finalizing the saved summary draft');
    await trail.enter('finalize');
    return draft;
  }
  // The prune step begins with sizing the context: a prune with nothing to do is recorded as
  // having taken that long.
  const pruneStarted = resources.clock();
  const before = await sizeBefore(resources, attempt, claimedStats);
  const passed = prunePassed(attempt, before.unprunedOutputs);
  // Only this compaction's prune steps mark outputs with its id: on its first attempt, a prune
  // step that marked none leaves finalize none of its own to flag for recall.
  const firstAttempt = attempt.compaction.attempts === 1;
  if (passed) {
    attempt.noOwnPruneMarks = firstAttempt;
    // Nothing to prune and nothing to send: the prune record and the summarize step in one statement.
    await trail.enter('summarize', before.patch, { name: 'prune', result: passed, startedAt: pruneStarted });
  } else {
    await trail.enter('prune', before.patch);
    const pruned = await trail.run(() => pruneStep(resources, attempt));
    attempt.noOwnPruneMarks = firstAttempt && pruned.parts === 0;
    await trail.enter('summarize', {
      prunedParts: attempt.compaction.prunedParts + pruned.parts,
      prunedTokens: attempt.compaction.prunedTokens + pruned.tokens,
    });
  }
  const outcome = await trail.run(() => summarizeStep(resources, attempt));
  if (outcome.kind === 'summary') {
    await trail.enter('finalize', { summaryDraft: toSummaryDraft(outcome) });
  }
  return outcome;
}

/** How many times one attempt summarises again because a covered message changed meanwhile. */
export const MAX_REPLANS = 3;

/**
 * Finalizes the summary; when a message it would put behind the boundary changed after the
 * summary was written (a tool result PATCHed in: db `CoveredMessageChangedError`), summarises
 * again from the view as it is now, up to {@link MAX_REPLANS} times, then lets the queue retry.
 */
async function finalizeOrReplan(
  resources: WorkflowResources,
  attempt: Attempt,
  trail: StepTrail,
  first: SummarizeOutcome,
): Promise<
  | (Finalized & { kind: 'completed'; writtenBy: SummaryOutcome['writtenBy'] })
  | { kind: 'nothing-to-compact'; reason: string }
> {
  let outcome = first;
  for (let replans = 0; ; replans++) {
    if (outcome.kind === 'nothing-to-compact') return outcome;
    const summary = outcome;
    try {
      const finalized = await trail.run(() => finalizeStep(resources, attempt, summary, trail.openRecord), {
        recordsItself: true,
      });
      return { kind: 'completed', ...finalized, writtenBy: summary.writtenBy };
    } catch (error) {
      if (!(error instanceof CoveredMessageChangedError) || replans >= MAX_REPLANS) throw error;
      resources.log.info(
        { compactionId: attempt.compaction.id, changedSeq: error.changedSeq },
        'a covered message changed while the summary was written; summarizing again',
      );
      // Entering summarize clears the change mark (db enterStep) before the view is read again.
      await trail.enter('summarize', { summaryDraft: null });
      outcome = await trail.run(() => summarizeStep(resources, attempt));
      if (outcome.kind === 'summary')
        await trail.enter('finalize', { summaryDraft: toSummaryDraft(outcome) });
    }
  }
}

/**
 * The view's size when the compaction first started (kept across retries), as a step patch, and
 * the view's unpruned tool outputs from the same stats (null on a retry, which reads none). The
 * claim's stats serve when they were measured with the policy's pinning; else they are read.
 */
async function sizeBefore(
  resources: WorkflowResources,
  attempt: Attempt,
  claimedStats: ContextTokenStats | undefined,
): Promise<{ patch: StepPatch; unprunedOutputs: UnprunedOutputs | null }> {
  if (attempt.compaction.tokensBefore !== null) return { patch: {}, unprunedOutputs: null };
  const { pinSystemMessages } = attempt.policy;
  const stats =
    claimedStats && pinSystemMessages === DEFAULT_POLICY.pinSystemMessages
      ? claimedStats
      : await contextTokenStats(resources.db, attempt.session.pk, { pinSystemMessages });
  const patch = {
    // The status's estimate: never below the stored count, so no usage report can make the
    // compaction's result look larger than what it started from.
    tokensBefore: estimateFromStats(stats, {
      mode: attempt.policy.estimate,
      calibrationCap: usageCalibrationCap(usableTokens(attempt.model, attempt.policy)),
      // The view as served: images past the media budget count as their markers.
      media: mediaBudgetOf(attempt.policy, usableTokens(attempt.model, attempt.policy)),
    }),
    messagesBefore: stats.contextMessages,
  };
  // finalize reads them from the attempt's row.
  attempt.compaction = { ...attempt.compaction, ...patch };
  return { patch, unprunedOutputs: stats.unprunedOutputs };
}

/** The claimed row and its fence: all a write needs to prove the attempt still owns the row. */
interface Owner {
  compaction: CompactionRow;
  fence: number;
}

async function fenced(
  resources: WorkflowResources,
  owner: Owner,
  patch: Parameters<typeof updateRunningCompaction>[3],
): Promise<CompactionRow> {
  const row = await updateRunningCompaction(resources.db, owner.compaction.id, owner.fence, patch);
  if (!row) throw new StaleAttemptError(owner.compaction.id, owner.fence, null);
  return row;
}

/** Ends the attempt as skipped or failed, fenced (StaleAttemptError when a newer attempt owns it). */
async function end(
  resources: WorkflowResources,
  owner: Owner,
  status: 'skipped' | 'failed',
  code: string,
  message: string,
): Promise<CompactionRow> {
  return fenced(resources, owner, {
    status,
    step: null,
    errorCode: code,
    errorMessage: message,
    finishedAt: resources.clock(),
  });
}

/**
 * Sends an event without waiting for Redis to answer. Events are best effort (the publisher
 * catches and reports its own failures), and one connection sends them in call order, so the
 * SSE stream sees them as before. Waited for, a slow Redis held every compaction (and its place
 * in the worker's step gate) for six round trips; throughput did not measurably change either
 * way on a local Redis.
 */
function publish<T extends CompactionEventType>(
  resources: WorkflowResources,
  session: SessionRow,
  compactionId: string,
  type: T,
  data: SessionEventMap[T],
): void {
  if (!resources.events) return;
  announceEvent(resources.events, resources.clock(), { session, compactionId }, type, data)
    // Redis' publisher reports its own failures; any other must not become an unhandled rejection.
    .catch((error: unknown) =>
      resources.log.warn({ compactionId, type, err: safeErrorMessage(error) }, 'event not published'),
    );
}
