import { isPinnedMessage, preparedDraftUsable } from '@compactor/core';
import { contentHash, findPreparedSummary, sessionModel, type SessionRow } from '@compactor/db';
import type { Attempt } from '../attempt';
import { loadCoveredView } from '../compaction-view';
import { CompactionFailedError } from '../errors';
import type { WorkflowResources } from '../resources';
import { fitOutcome } from './fit';
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
 * The compaction's outcome from the session's prepared summary, when it still covers a prefix of
 * the view (core `preparedDraftUsable`): the draft's summary, its cut as the boundary, and every
 * message after the cut kept verbatim, made to fit as any summary is (steps/fit.ts: clamps, a
 * boundary moved forward). No LLM call; the draft's spend is charged to this compaction, and
 * `detail.prepared` names the draft. `null` when there is no usable draft, or when it would not
 * fit or shrink the context: the compaction then summarises as it would without one.
 */
export async function preparedOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  keepRecentTokens: number,
): Promise<SummaryOutcome | null> {
  const { compaction, session, policy } = attempt;
  const row = await findPreparedSummary(resources.db, session.pk);
  if (!row || row.status !== 'ready' || row.cutSeq === null || row.settingsKey === null) return null;
  const latestCompletedId = attempt.latestCompleted?.id ?? null;
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
  try {
    const fitted = fitOutcome(resources, attempt, view, candidate, keepRecentTokens);
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
