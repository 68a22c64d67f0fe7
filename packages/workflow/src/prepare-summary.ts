import {
  draftKeepRecentTokens,
  keepRecentTokensFor,
  PolicyError,
  type Policy,
  type PolicyInput,
} from '@compactor/core';
import {
  beginPreparedSummary,
  endPreparedSummary,
  markRecallableBehind,
  findActiveCompaction,
  findLatestCompletedCompaction,
  findSessionByPk,
  safeErrorMessage,
  savePreparedSummary,
  sessionModel,
  type CompactionRow,
  type SessionRow,
} from '@compactor/db';
import type { Attempt } from './attempt';
import { CompactionFailedError, isAbort, llmFailureCode } from './errors';
import type { WorkflowResources } from './resources';
import { preparedSettingsKey } from './steps/prepared-draft';
import { plannedOutcome } from './steps/summarize';
import { toSummaryDraft } from './steps/summary-writing';
import { resolveStoredPolicy } from './stored-policy';

/** How a prepare job ended: a draft written, given up (with a code), or replaced meanwhile. */
export type PrepareSummaryOutcome =
  | { status: 'ready'; cutSeq: number }
  | { status: 'skipped' | 'failed'; code: string }
  | { status: 'superseded' };

/**
 * Writes the session's prepared summary for request `draftId` (policy `prepare`): core's plan
 * for an auto compaction and the summarizer's text, as the compaction at the trigger would write
 * them (its keep budget less `headroomTokens`, the growth still to come before the trigger), stored as a draft (`prepared_summaries`) without changing the context — no prune, no
 * boundary, no summary message. Never in a compaction's way: it gives up when one is active (its
 * result moves the boundary the draft would be built on), and a compaction that starts while it
 * runs goes ahead without it. Every write is fenced by the request's id: a request replaced
 * meanwhile writes nothing. Failures give the draft up (the trigger then summarises as without
 * one); only a cancellation is thrown, for the queue.
 */
export async function prepareSummary(
  resources: WorkflowResources,
  sessionPk: number,
  draftId: string,
  {
    signal,
    headroomTokens = 0,
  }: {
    signal?: AbortSignal | undefined;
    /** How far below its trigger the session was at the request (core `draftKeepRecentTokens`). */
    headroomTokens?: number;
  } = {},
): Promise<PrepareSummaryOutcome> {
  const { db } = resources;
  const giveUp = async (status: 'skipped' | 'failed', code: string): Promise<PrepareSummaryOutcome> => {
    await endPreparedSummary(db, sessionPk, draftId, status, code);
    return { status, code };
  };
  const session = await findSessionByPk(db, sessionPk);
  if (!session) return { status: 'superseded' };
  let policy: Policy;
  try {
    policy = resolveStoredPolicy(session.policy as PolicyInput);
  } catch (error) {
    if (error instanceof PolicyError) return giveUp('skipped', 'invalid_policy');
    throw error;
  }
  if (policy.prepare === null || policy.strategy !== 'summarize') return giveUp('skipped', 'policy');
  if (await findActiveCompaction(db, sessionPk)) return giveUp('skipped', 'compaction_active');
  const latestCompleted = await findLatestCompletedCompaction(db, sessionPk);
  const begun = await beginPreparedSummary(db, sessionPk, draftId, session.lastSeq);
  if (!begun) return { status: 'superseded' };
  if (begun.baseCompactionId !== (latestCompleted?.id ?? null)) return giveUp('skipped', 'boundary_moved');

  const attempt = draftAttempt(session, policy, latestCompleted, draftId, signal);
  const ids = { sessionId: session.id, tenantId: session.tenantId, draftId };
  try {
    // Planned for the trigger's moment: what is appended until then is kept after the cut too.
    const keepRecentTokens = draftKeepRecentTokens(
      keepRecentTokensFor('auto', attempt.model, policy),
      headroomTokens,
      policy.keepRecent.minTokens,
    );
    const { outcome } = await plannedOutcome(resources, attempt, keepRecentTokens);
    if (outcome.kind !== 'summary') return await giveUp('skipped', 'nothing_to_compact');
    // A fallback's truncate text costs the compaction nothing to write itself: keep none.
    if (outcome.writtenBy !== 'llm') return await giveUp('failed', outcome.fallback?.code ?? 'no_summary');
    const saved = await savePreparedSummary(db, sessionPk, draftId, {
      settingsKey: preparedSettingsKey(session),
      cutSeq: outcome.boundarySeq,
      outcome: toSummaryDraft(outcome),
      model: outcome.llm?.model ?? null,
      usageInput: outcome.llm?.usage.input ?? null,
      usageOutput: outcome.llm?.usage.output ?? null,
      costUsd: outcome.llm?.costUsd ?? null,
      preparedAt: resources.clock(),
    });
    if (!saved) return { status: 'superseded' };
    resources.log.info({ ...ids, cutSeq: outcome.boundarySeq }, 'prepared summary written');
    // What the draft's cut will put out of view is indexed for recall now, ahead of the trigger:
    // the compaction that finalizes the draft then finds it done (flagging early shows nothing:
    // recall checks what the view holds). Best effort: the draft is ready whatever happens here,
    // and finalize flags what is left.
    await markRecallableBehind(db, sessionPk, outcome.boundarySeq).catch((error: unknown) => {
      resources.log.warn({ ...ids, err: safeErrorMessage(error) }, 'recall flags not written ahead');
    });
    return { status: 'ready', cutSeq: outcome.boundarySeq };
  } catch (error) {
    if (isAbort(error)) throw error;
    const code = error instanceof CompactionFailedError ? error.code : llmFailureCode(error);
    resources.log.warn({ ...ids, code, err: safeErrorMessage(error) }, 'prepared summary not written');
    return giveUp('failed', code);
  }
}

/**
 * The attempt the summarize step's planning and writing read (steps/summarize.ts
 * `plannedOutcome`): an auto compaction of the session as it is, with no row of its own. Of the
 * row they read the request (reason, strategy, force, keep budget, instructions) and the id for
 * log lines; nothing is ever written with it (no fence).
 */
function draftAttempt(
  session: SessionRow,
  policy: Policy,
  latestCompleted: CompactionRow | null,
  draftId: string,
  signal: AbortSignal | undefined,
): Attempt {
  const request: Partial<CompactionRow> = {
    id: draftId,
    sessionPk: session.pk,
    reason: 'auto',
    strategy: 'summarize',
    force: false,
    keepRecentTokens: null,
    instructions: null,
    tokensBefore: null,
    coversThroughSeq: session.lastSeq,
  };
  return {
    compaction: request as CompactionRow,
    fence: 0,
    session,
    policy,
    model: sessionModel(session),
    latestCompleted,
    coversThroughSeq: session.lastSeq,
    // A transient failure gives the draft up instead of retrying: the trigger will summarise.
    lastAttempt: false,
    signal,
  };
}
