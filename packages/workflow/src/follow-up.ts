import { evaluateFollowUp, mayFollowUp } from '@compactor/core';
import {
  safeErrorMessage,
  type CompactionWithOutbox,
  type CompletionFollowUp,
  type CompletionMeasured,
} from '@compactor/db';
import type { Attempt } from './attempt';
import { compactionRequestRow } from './request-compaction';
import type { WorkflowResources } from './resources';

/**
 * The follow-up a completion decides in its own transaction (db `completeCompactionFollowedUp`):
 * when messages appended while the compaction ran leave the session over its trigger again (it
 * was outrun), the next compaction's row and its job's outbox entry are written with the
 * completion, as the API's auto trigger writes them. The commit that makes this compaction
 * `completed` makes the next one `pending`, so no reader ever sees a completed compaction, none
 * active and a view over its trigger; the client may append nothing more before its next model
 * call, so the next append's trigger could come too late. Core decides (`mayFollowUp`,
 * `evaluateFollowUp`): a follow-up needs messages appended while the last one ran, so follow-ups
 * never chain without appends. A fenced-out (stale) completion writes nothing, so it requests
 * nothing either. None without `resources.followUps` (the next append's trigger asks instead)
 * or with `auto` off.
 *
 * Like the worker's requests before it, a follow-up is not held to the tenant's cap: it takes
 * the place the completing compaction leaves in the tenant's count, in the same commit.
 */
export function followUpOf(resources: WorkflowResources, attempt: Attempt): CompletionFollowUp | undefined {
  const followUps = resources.followUps;
  const { model, policy, session, compaction } = attempt;
  if (!followUps || !policy.auto) return undefined;
  const coversThroughSeq = attempt.coversThroughSeq;
  return {
    coversThroughSeq,
    decide({ completed, pinnedTokens, appended }) {
      const tokensAfter = completed.tokensAfter;
      if (tokensAfter === null) return null;
      // It runs inside the completing transaction: a failure here must not undo the completion.
      try {
        if (!mayFollowUp({ tokensAfter, model, policy, pinnedTokens })) return null;
        const verdict = evaluateFollowUp({
          tokensAfter,
          coversThroughSeq,
          appended,
          model,
          policy,
          pinnedTokens,
        });
        if (!verdict.compactionReason) return null;
        const row = compactionRequestRow(session, { reason: verdict.compactionReason });
        return { row, jobName: followUps.jobName };
      } catch (error) {
        resources.log.warn(
          { compactionId: compaction.id, sessionId: session.id, err: safeErrorMessage(error) },
          'the follow-up compaction could not be decided; the next append will ask again',
        );
        return null;
      }
    },
  };
}

/**
 * Once the completion committed with its follow-up: logs it, then hands it to the queue (its
 * `compaction.requested` event and its job). Best effort: the row and its outbox entry are
 * committed, so the reconciler enqueues what this could not.
 */
export async function dispatchFollowUp(
  resources: WorkflowResources,
  attempt: Attempt,
  followUp: CompactionWithOutbox,
  measured: CompletionMeasured,
): Promise<void> {
  const { session } = attempt;
  const ids = { compactionId: attempt.compaction.id, sessionId: session.id, tenantId: session.tenantId };
  resources.log.info(
    {
      ...ids,
      followUpId: followUp.compaction.id,
      tokensAfter: measured.completed.tokensAfter,
      appendedTokens: measured.appended.tokens,
    },
    'messages appended while it ran left the session over its trigger: another compaction requested',
  );
  try {
    await resources.followUps?.started(session, followUp);
  } catch (error) {
    resources.log.warn(
      { ...ids, followUpId: followUp.compaction.id, err: safeErrorMessage(error) },
      'the follow-up compaction is requested but not enqueued; the reconciler will',
    );
  }
}
