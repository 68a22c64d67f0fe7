import { continuationAfterCompaction } from '@compactor/core';
import { cacheEffectOf } from '@compactor/db';
import type { Attempt } from './attempt';
import { dispatchFollowUp } from './follow-up';
import type { WorkflowResources } from './resources';
import type { Announce } from './step-trail';
import type { Finalized } from './steps/finalize';
import type { SummaryOutcome } from './steps/summary-writing';

/**
 * What a completed compaction tells once its transaction committed: its log line, its follow-up
 * handed to the queue (follow-up.ts), then `compaction.completed` and `session.compacted`.
 */
export async function announceCompletion(
  resources: WorkflowResources,
  attempt: Attempt,
  announce: Announce,
  { completed, followUp, measured, writtenBy }: Finalized & { writtenBy: SummaryOutcome['writtenBy'] },
): Promise<void> {
  const { compaction, session } = attempt;
  resources.log.info(
    {
      compactionId: compaction.id,
      sessionId: session.id,
      tenantId: session.tenantId,
      tokensBefore: completed.tokensBefore,
      tokensAfter: completed.tokensAfter,
      writtenBy,
      fallback: completed.fallbackCode,
    },
    'compaction completed',
  );
  const sizes = {
    tokensBefore: completed.tokensBefore,
    tokensAfter: completed.tokensAfter,
    messagesBefore: completed.messagesBefore,
    messagesAfter: completed.messagesAfter,
    boundarySeq: completed.boundarySeq,
    // The truncate fallback wrote the summary: its code, as `compaction.failed` carries one.
    fallback: completed.fallbackCode === null ? null : { code: completed.fallbackCode },
    cache: cacheEffectOf(completed),
  };
  // The follow-up committed with the completion, so every read since sees it active. Its
  // `compaction.requested` and its job go out before this one's events: a client woken by
  // `compaction.completed` has heard of it already.
  if (followUp && measured) await dispatchFollowUp(resources, attempt, followUp, measured);
  announce('compaction.completed', sizes);
  // OpenCode's "Continue if you have next steps" (policy `continueMessage`): what the client
  // appends after an automatic compaction; the trigger holds on it (core continuation.ts).
  const continueWith = continuationAfterCompaction(attempt.policy, compaction.reason);
  announce('session.compacted', {
    ...sizes,
    ...(continueWith ? { continueWith } : {}),
    ...(followUp ? { followUp: { compactionId: followUp.compaction.id } } : {}),
  });
}
