import { evaluateFollowUp, mayFollowUp } from '@compactor/core';
import { appendedAfter, contextTokenStats, type CompactionRow } from '@compactor/db';
import type { Attempt } from './attempt';
import { safeErrorMessage } from '@compactor/db';
import type { WorkflowResources } from './resources';

/**
 * After a compaction completed: when messages appended while it ran leave the session over its
 * trigger again (it was outrun), requests the next compaction at once through
 * `resources.requestCompaction`, the API's path. The client may append nothing more before its
 * next model call, so the next append's trigger could come too late. Core decides
 * (`evaluateFollowUp`): a follow-up needs messages appended while the last one ran, so
 * follow-ups never chain without appends. Best effort: the compaction is done whatever happens
 * here, and over the usable window the next append's trigger asks again.
 */
export async function requestFollowUp(
  resources: WorkflowResources,
  attempt: Attempt,
  completed: CompactionRow,
): Promise<CompactionRow | null> {
  const request = resources.requestCompaction;
  const { model, policy, session } = attempt;
  const tokensAfter = completed.tokensAfter;
  if (!request || tokensAfter === null) return null;
  const coversThroughSeq = completed.coversThroughSeq ?? attempt.coversThroughSeq;
  const ids = { compactionId: completed.id, sessionId: session.id, tenantId: session.tenantId };
  try {
    // A tokens trigger counts history: the pinned system messages in `tokensAfter` are left
    // out (one statement, only for such a policy).
    const pinnedTokens =
      policy.trigger.kind === 'tokens' && policy.pinSystemMessages
        ? (await contextTokenStats(resources.db, session.pk, { pinSystemMessages: true })).pinnedTokens
        : 0;
    if (!mayFollowUp({ tokensAfter, model, policy, pinnedTokens })) return null;
    const appended = await appendedAfter(resources.db, session.pk, coversThroughSeq);
    const verdict = evaluateFollowUp({
      tokensAfter,
      coversThroughSeq,
      appended,
      model,
      policy,
      pinnedTokens,
    });
    if (!verdict.compactionReason) return null;
    const { compaction } = await request(session, { reason: verdict.compactionReason });
    resources.log.info(
      { ...ids, followUpId: compaction.id, tokensAfter, appendedTokens: appended.tokens },
      'messages appended while it ran left the session over its trigger: another compaction requested',
    );
    return compaction;
  } catch (error) {
    resources.log.warn(
      { ...ids, err: safeErrorMessage(error) },
      'the follow-up compaction could not be requested; the next append will ask again',
    );
    return null;
  }
}
