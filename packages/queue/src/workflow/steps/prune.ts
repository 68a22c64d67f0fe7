import { pruneToolOutputs } from '@compactor/db';
import type { Attempt } from '../attempt';
import { pruneByCharEstimate } from '../prune-by-estimate';
import type { WorkflowResources } from '../resources';

/** What the prune step marked (`tokens`: output tokens saved); `skipped: 'policy'` when `prune` is off. */
export interface PruneOutcome {
  parts: number;
  tokens: number;
  /** Output tokens that were candidates; when `parts` is 0 this says why (below the minimum). */
  candidateTokens: number;
  skipped: 'policy' | null;
}

/**
 * OpenCode's prune inside a compaction, over the covered range only: selection (core's rule,
 * in SQL) and marks in one statement, so no output is loaded. Repeating it is harmless: the
 * walk stops at the marks it wrote, and a mark that exists already is not counted again.
 */
export async function pruneStep(resources: WorkflowResources, attempt: Attempt): Promise<PruneOutcome> {
  if (!attempt.policy.prune) return { parts: 0, tokens: 0, candidateTokens: 0, skipped: 'policy' };
  if (attempt.policy.tokenCount === 'chars') {
    const marked = await pruneByCharEstimate(resources.db, attempt.session.pk, {
      coversThroughSeq: attempt.coversThroughSeq,
      policy: attempt.policy,
      at: resources.clock(),
      by: attempt.compaction.id,
    });
    return { ...marked, skipped: null };
  }
  const marked = await pruneToolOutputs(resources.db, attempt.session.pk, {
    coversThroughSeq: attempt.coversThroughSeq,
    pinSystemMessages: attempt.policy.pinSystemMessages,
    pruning: attempt.policy.pruning,
    at: resources.clock(),
    by: attempt.compaction.id,
  });
  return { ...marked, skipped: null };
}
