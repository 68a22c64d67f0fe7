import {
  StaleAttemptError,
  claimCompaction,
  contextTokenStats,
  estimateFromStats,
  findSessionByPk,
} from '@compactor/db';
import {
  finishCompactionStep,
  insertCompactionStep,
  updateRunningCompaction,
  type CompactionRow,
} from '@compactor/db';
import type { CompactionStep } from '@compactor/core';
import { attemptFor, type Attempt } from './attempt';
import { CompactionFailedError, isAbort, isTransient } from './errors';
import type { WorkflowResources } from './resources';
import { finalizeStep } from './steps/finalize';
import { pruneStep } from './steps/prune';
import { summarizeStep } from './steps/summarize';

/** How the queue runs this attempt: whether it is the last try, and the job's cancellation signal. */
export interface RunOptions {
  /** The queue's last try: transient failures end the compaction instead of being rethrown. */
  lastAttempt?: boolean;
  signal?: AbortSignal;
}

/** How an attempt ended; transient failures are thrown instead, unless it was the last attempt. */
export type RunOutcome =
  | { status: 'completed' | 'skipped' | 'failed'; compaction: CompactionRow }
  /** Not active any more (finished, or superseded by a newer attempt): nothing was written. */
  | { status: 'inactive' | 'stale'; compaction: CompactionRow | null };

/**
 * Runs one attempt of a compaction: claim (new fence, covered range fixed on the first attempt)
 * → prune → summarize → finalize, each step recorded. Transient failures are rethrown for the
 * queue to retry unless this is the last attempt; everything else ends the compaction as
 * `failed` (or `skipped` when there is nothing to compact). Safe to run again after a crash:
 * every step is idempotent and every write is fenced.
 */
export async function runCompaction(
  resources: WorkflowResources,
  compactionId: string,
  options: RunOptions = {},
): Promise<RunOutcome> {
  const { db } = resources;
  const claimed = await claimCompaction(db, compactionId, resources.clock());
  if (!claimed) return { status: 'inactive', compaction: null };
  const session = await findSessionByPk(db, claimed.sessionPk);
  if (!session) return { status: 'inactive', compaction: null };
  const attempt = attemptFor(claimed, session, {
    lastAttempt: options.lastAttempt ?? true,
    signal: options.signal,
  });

  try {
    await recordSizeBefore(resources, attempt);
    const pruned = await step(resources, attempt, 'prune', () => pruneStep(resources, attempt));
    await fenced(resources, attempt, {
      prunedParts: claimed.prunedParts + pruned.parts,
      prunedTokens: claimed.prunedTokens + pruned.tokens,
    });
    const outcome = await step(resources, attempt, 'summarize', () => summarizeStep(resources, attempt));
    if (outcome.kind === 'nothing-to-compact') {
      return {
        status: 'skipped',
        compaction: await end(resources, attempt, 'skipped', 'nothing_to_compact', outcome.reason),
      };
    }
    const completed = await step(resources, attempt, 'finalize', () =>
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
    return { status: 'completed', compaction: completed };
  } catch (error) {
    if (error instanceof StaleAttemptError) return { status: 'stale', compaction: null };
    if (isAbort(error) || (isTransient(error) && !attempt.lastAttempt)) throw error;
    const failure =
      error instanceof CompactionFailedError
        ? error
        : new CompactionFailedError('internal_error', (error as Error).message);
    resources.log.warn({ compactionId, code: failure.code, err: failure.message }, 'compaction failed');
    try {
      return {
        status: 'failed',
        compaction: await end(resources, attempt, 'failed', failure.code, failure.message),
      };
    } catch (endError) {
      if (endError instanceof StaleAttemptError) return { status: 'stale', compaction: null };
      throw endError;
    }
  }
}

/** The view's size when the compaction first started (kept across retries). */
async function recordSizeBefore(resources: WorkflowResources, attempt: Attempt): Promise<void> {
  if (attempt.compaction.tokensBefore !== null) return;
  const stats = await contextTokenStats(resources.db, attempt.session.pk, {
    pinSystemMessages: attempt.policy.pinSystemMessages,
  });
  const row = await fenced(resources, attempt, {
    tokensBefore: estimateFromStats(stats, attempt.policy.estimate),
    messagesBefore: stats.contextMessages,
  });
  attempt.compaction = row;
}

async function fenced(
  resources: WorkflowResources,
  attempt: Attempt,
  patch: Parameters<typeof updateRunningCompaction>[3],
): Promise<CompactionRow> {
  const row = await updateRunningCompaction(resources.db, attempt.compaction.id, attempt.fence, patch);
  if (!row) throw new StaleAttemptError(attempt.compaction.id, attempt.fence, null);
  return row;
}

/** Runs one step with its `compaction_steps` record and the row's `step` column kept current. */
async function step<T>(
  resources: WorkflowResources,
  attempt: Attempt,
  name: CompactionStep,
  run: () => Promise<T>,
): Promise<T> {
  await fenced(resources, attempt, { step: name });
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
      detail: stepDetail(result),
      at: resources.clock(),
    });
    return result;
  } catch (error) {
    await finishCompactionStep(resources.db, record.pk, {
      status: 'failed',
      errorMessage: (error as Error).message,
      at: resources.clock(),
    });
    throw error;
  }
}

/** What a step's record keeps of its result: plain numbers and labels, never message text. */
function stepDetail(result: unknown): Record<string, unknown> {
  if (result === null || typeof result !== 'object') return {};
  const { summaryText: _text, fileOps: _ops, ...rest } = result as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

/** Ends the attempt as skipped or failed, fenced (StaleAttemptError when a newer attempt owns it). */
async function end(
  resources: WorkflowResources,
  attempt: Attempt,
  status: 'skipped' | 'failed',
  code: string,
  message: string,
): Promise<CompactionRow> {
  return fenced(resources, attempt, {
    status,
    step: null,
    errorCode: code,
    errorMessage: message,
    finishedAt: resources.clock(),
  });
}
