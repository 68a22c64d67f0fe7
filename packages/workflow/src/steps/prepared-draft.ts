import { setTimeout as delay } from 'node:timers/promises';
import { draftServesRequest, isPinnedMessage, preparedDraftUsable } from '@compactor/core';
import {
  contentHash,
  findPreparedSummary,
  sessionModel,
  type PreparedSummaryRow,
  type SessionRow,
} from '@compactor/db';
import type { Attempt } from '../attempt';
import { loadCoveredView } from '../compaction-view';
import { CompactionFailedError } from '../errors';
import type { WorkflowResources } from '../resources';
import { fitOutcome, ledgerInForce } from './fit';
import { parseSummaryDraft, type SummaryOutcome } from './summary-writing';

/**
 * What a prepared summary was written with, as one key: the session's policy input and model.
 * A draft written under another policy or model (a `PATCH /sessions/:id` since) does not serve:
 * its cut and summary budget were that policy's.
 */
export function preparedSettingsKey(session: SessionRow): string {
  return contentHash({ policy: session.policy, model: sessionModel(session) });
}

/**
 * How long a compaction waits for a draft being written by a live worker: about one summarizer
 * call, at most. A dead writer's draft is waited for only until its job's lock expires.
 */
export const DRAFT_WAIT_LIMIT_MS = 30_000;
const DRAFT_POLL_MS = 50;

/**
 * The compaction's outcome from the session's prepared summary, when it still covers a prefix of
 * the view (core `preparedDraftUsable`). A draft still being written for this compaction's
 * boundary and request is awaited first (up to {@link DRAFT_WAIT_LIMIT_MS}, and no longer than its
 * writer lives, outside the worker's step gate): it began before the trigger fired, so it ends
 * sooner than a summary begun now would. The outcome: the draft's summary, its cut as the
 * boundary, and every message after the cut kept verbatim, made to fit as any summary is
 * (steps/fit.ts: clamps, a boundary moved forward). No LLM call; the draft's spend is charged to this compaction, and
 * `detail.prepared` names the draft. `null` when there is no usable draft, or when it would not
 * fit or shrink the context: the compaction then summarises as it would without one.
 */
export async function preparedOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  keepRecentTokens: number,
): Promise<SummaryOutcome | null> {
  const { compaction, session, policy } = attempt;
  const latestCompletedId = attempt.latestCompleted?.id ?? null;
  let row = await findPreparedSummary(resources.db, session.pk);
  if (row && beingWritten(row, attempt)) row = await awaitDraft(resources, attempt, row);
  if (!row || row.status !== 'ready' || row.cutSeq === null || row.settingsKey === null) return null;
  // The view is read only for a draft built on the boundary the compaction starts from.
  if (row.baseCompactionId !== latestCompletedId) return null;
  const draft = parseSummaryDraft(row.outcome);
  if (!draft) return null;
  const view = await loadCoveredView(
    resources.db,
    session.pk,
    attempt.coversThroughSeq,
    policy,
    attempt.latestCompleted,
  );
  const first = view.find((m) => !m.summary && !(policy.pinSystemMessages && isPinnedMessage(m)));
  const verdict = preparedDraftUsable(
    {
      baseCompactionId: row.baseCompactionId,
      cutSeq: row.cutSeq,
      changedSeq: row.changedSeq,
      settingsKey: row.settingsKey,
    },
    {
      latestCompletedId,
      settingsKey: preparedSettingsKey(session),
      reason: compaction.reason,
      strategy: compaction.strategy,
      force: compaction.force,
      instructions: compaction.instructions,
      keepRecentTokens: compaction.keepRecentTokens,
      coversThroughSeq: attempt.coversThroughSeq,
      firstUnsummarizedSeq: first?.seq ?? null,
    },
  );
  const ids = { compactionId: compaction.id, draftId: row.id };
  if (!verdict.usable) {
    resources.log.info({ ...ids, reason: verdict.reason }, 'prepared summary not used');
    return null;
  }
  const candidate: SummaryOutcome = {
    ...draft,
    boundarySeq: row.cutSeq,
    clamps: [],
    detail: {
      ...draft.detail,
      prepared: { draftId: row.id, preparedAt: row.preparedAt?.toISOString() ?? null },
    },
  };
  const previousLedger = await ledgerInForce(resources, attempt);
  try {
    const fitted = fitOutcome(resources, attempt, view, candidate, keepRecentTokens, previousLedger);
    if (fitted.kind === 'summary') {
      resources.log.info(ids, 'finalizing a prepared summary');
      return fitted;
    }
    resources.log.info({ ...ids, reason: 'no-shrink' }, 'prepared summary not used');
  } catch (error) {
    // Kept messages that cannot fit after the draft's older cut may fit after a fresh one.
    if (!(error instanceof CompactionFailedError)) throw error;
    resources.log.info({ ...ids, reason: error.code }, 'prepared summary not used');
  }
  return null;
}

/**
 * Whether the session's draft is being written for this compaction: its job began reading the
 * view (`coversThroughSeq` set) on the boundary the compaction starts from, and the request is
 * one a draft serves. A request still queued is not waited for: it may not start for a while.
 */
function beingWritten(row: PreparedSummaryRow, attempt: Attempt): boolean {
  const { compaction } = attempt;
  return (
    row.status === 'pending' &&
    row.coversThroughSeq !== null &&
    row.baseCompactionId === (attempt.latestCompleted?.id ?? null) &&
    draftServesRequest(compaction)
  );
}

/** Why a compaction stopped waiting for a draft: it ended or was replaced, its writer died, or the limit. */
export type DraftWaitEnd = 'draft_ended' | 'writer_gone' | 'limit';

/**
 * Polls the draft until its job ends it (ready, failed, skipped), a newer request replaces it, its
 * writer is known dead (`draftWriterAlive`: a job whose worker died leaves it pending, and the
 * job that takes over gives it up while this compaction is active), or the wait reaches its
 * limit; the row as it is then.
 */
async function awaitDraft(
  resources: WorkflowResources,
  attempt: Attempt,
  pending: PreparedSummaryRow,
): Promise<PreparedSummaryRow | null> {
  const started = Date.now();
  const read = () => findPreparedSummary(resources.db, attempt.session.pk);
  const poll = async (): Promise<{ row: PreparedSummaryRow | null; end: DraftWaitEnd }> => {
    for (;;) {
      await delay(DRAFT_POLL_MS, undefined, { signal: attempt.signal });
      const row = await read();
      if (!row || row.id !== pending.id || row.status !== 'pending') return { row, end: 'draft_ended' };
      if (resources.draftWriterAlive && !(await resources.draftWriterAlive(pending.id))) {
        // Its job writes the draft before it lets its lock go: one more read takes a draft that
        // landed between the two.
        return { row: await read(), end: 'writer_gone' };
      }
      if (Date.now() - started >= DRAFT_WAIT_LIMIT_MS) return { row, end: 'limit' };
    }
  };
  const { row, end } = await (resources.waitOutside ? resources.waitOutside(poll) : poll());
  resources.log.info(
    {
      compactionId: attempt.compaction.id,
      draftId: pending.id,
      status: row?.id === pending.id ? row.status : 'replaced',
      end,
      waitedMs: Date.now() - started,
    },
    'waited for the prepared summary being written',
  );
  return row;
}
