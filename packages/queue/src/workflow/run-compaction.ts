import type { CompactionStep } from '@compactor/core';
import {
  StaleAttemptError,
  claimCompaction,
  contextTokenStats,
  estimateFromStats,
  findSessionByPk,
  finishCompactionStep,
  insertCompactionStep,
  updateRunningCompaction,
  type CompactionRow,
  type SessionRow,
} from '@compactor/db';
import type { SessionEventType } from '../events/session-events';
import { attemptFor, type Attempt } from './attempt';
import { CompactionFailedError, safeErrorMessage, shouldRethrow } from './errors';
import type { WorkflowResources } from './resources';
import { finalizeStep } from './steps/finalize';
import { pruneStep } from './steps/prune';
import { summarizeStep } from './steps/summarize';
import { parseSummaryDraft, toSummaryDraft, type SummaryOutcome } from './steps/summary-writing';

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
  | { status: 'completed' | 'skipped' | 'failed'; compaction: CompactionRow }
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
  const { db } = resources;
  const claimed = await claimCompaction(db, compactionId, resources.clock());
  if (!claimed) return { status: 'inactive', compaction: null };
  const session = await findSessionByPk(db, claimed.sessionPk);
  if (!session) return { status: 'inactive', compaction: null };
  const owner = { compaction: claimed, fence: claimed.fence, session };
  const announce = (type: SessionEventType, data: Record<string, unknown> = {}) =>
    publish(resources, session, compactionId, type, data);

  try {
    const attempt = attemptFor(claimed, session, options);
    await announce('compaction.started', { attempt: claimed.attempts, reason: claimed.reason });
    const outcome = await runSteps(resources, attempt, announce);
    if (outcome.kind === 'nothing-to-compact') {
      const skipped = await end(resources, owner, 'skipped', 'nothing_to_compact', outcome.reason);
      await announce('compaction.skipped', { reason: outcome.reason });
      return { status: 'skipped', compaction: skipped };
    }
    const completed = await step(resources, attempt, 'finalize', announce, () =>
      finalizeStep(resources, attempt, outcome),
    );
    resources.log.info(
      {
        compactionId,
        tokensBefore: completed.tokensBefore,
        tokensAfter: completed.tokensAfter,
        writtenBy: outcome.writtenBy,
      },
      'compaction completed',
    );
    const sizes = {
      tokensBefore: completed.tokensBefore,
      tokensAfter: completed.tokensAfter,
      messagesBefore: completed.messagesBefore,
      messagesAfter: completed.messagesAfter,
      boundarySeq: completed.boundarySeq,
    };
    await announce('compaction.completed', sizes);
    await announce('session.compacted', sizes);
    return { status: 'completed', compaction: completed };
  } catch (error) {
    if (error instanceof StaleAttemptError) return { status: 'stale', compaction: null };
    if (shouldRethrow(error, options)) throw error;
    const failure =
      error instanceof CompactionFailedError
        ? error
        : new CompactionFailedError('internal_error', safeErrorMessage(error));
    resources.log.warn({ compactionId, code: failure.code, err: failure.message }, 'compaction failed');
    try {
      const failed = await end(resources, owner, 'failed', failure.code, failure.message);
      await announce('compaction.failed', { status: 'failed', error: { code: failure.code } });
      return { status: 'failed', compaction: failed };
    } catch (endError) {
      if (endError instanceof StaleAttemptError) return { status: 'stale', compaction: null };
      throw endError;
    }
  }
}

type Announce = (type: SessionEventType, data?: Record<string, unknown>) => Promise<void>;

/**
 * prune → summarize, then the summary is saved as the row's draft before finalize: an attempt
 * that finds a draft (an earlier one paid for the summary, then crashed or failed to finalize)
 * goes straight to finalize.
 */
async function runSteps(
  resources: WorkflowResources,
  attempt: Attempt,
  announce: Announce,
): Promise<SummaryOutcome | { kind: 'nothing-to-compact'; reason: string }> {
  const draft = parseSummaryDraft(attempt.compaction.summaryDraft);
  if (draft) {
    resources.log.info({ compactionId: attempt.compaction.id }, 'finalizing the saved summary draft');
    return draft;
  }
  await recordSizeBefore(resources, attempt);
  const pruned = await step(resources, attempt, 'prune', announce, () => pruneStep(resources, attempt));
  attempt.compaction = await fenced(resources, attempt, {
    prunedParts: attempt.compaction.prunedParts + pruned.parts,
    prunedTokens: attempt.compaction.prunedTokens + pruned.tokens,
  });
  const outcome = await step(resources, attempt, 'summarize', announce, () =>
    summarizeStep(resources, attempt),
  );
  if (outcome.kind === 'summary') {
    attempt.compaction = await fenced(resources, attempt, { summaryDraft: toSummaryDraft(outcome) });
  }
  return outcome;
}

/** The view's size when the compaction first started (kept across retries). */
async function recordSizeBefore(resources: WorkflowResources, attempt: Attempt): Promise<void> {
  if (attempt.compaction.tokensBefore !== null) return;
  const stats = await contextTokenStats(resources.db, attempt.session.pk, {
    pinSystemMessages: attempt.policy.pinSystemMessages,
  });
  attempt.compaction = await fenced(resources, attempt, {
    tokensBefore: estimateFromStats(stats, attempt.policy.estimate),
    messagesBefore: stats.contextMessages,
  });
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

/** Runs one step with its `compaction_steps` record, the row's `step` column and a step event. */
async function step<T>(
  resources: WorkflowResources,
  attempt: Attempt,
  name: CompactionStep,
  announce: Announce,
  run: () => Promise<T>,
): Promise<T> {
  await fenced(resources, attempt, { step: name });
  await announce('compaction.step', { step: name, attempt: attempt.compaction.attempts });
  const record = await insertCompactionStep(resources.db, {
    compactionId: attempt.compaction.id,
    step: name,
    attempt: attempt.compaction.attempts,
    status: 'running',
    startedAt: resources.clock(),
  });
  try {
    const result = await run();
    await finishCompactionStep(resources.db, record.pk, {
      status: 'completed',
      detail: stepDetail(name, result),
      at: resources.clock(),
    });
    return result;
  } catch (error) {
    await finishCompactionStep(resources.db, record.pk, {
      status: 'failed',
      errorMessage: safeErrorMessage(error),
      at: resources.clock(),
    });
    throw error;
  }
}

/**
 * What a step's record keeps of its result: plain numbers and labels, never message text
 * (summaries, instructions and file paths stay out of step records).
 */
export function stepDetail(name: CompactionStep, result: unknown): Record<string, unknown> {
  if (result === null || typeof result !== 'object') return {};
  if (name === 'finalize') {
    const row = result as CompactionRow;
    return {
      boundarySeq: row.boundarySeq,
      summaryMessages: row.summaryMessageIds.length,
      tokensAfter: row.tokensAfter,
      messagesAfter: row.messagesAfter,
    };
  }
  const { summaryText: _text, fileOps: _ops, ...rest } = result as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
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

async function publish(
  resources: WorkflowResources,
  session: SessionRow,
  compactionId: string,
  type: SessionEventType,
  data: Record<string, unknown>,
): Promise<void> {
  await resources.events?.publish({
    type,
    sessionPk: session.pk,
    sessionId: session.id,
    compactionId,
    at: resources.clock().toISOString(),
    data,
  });
}
