import { pruneCouldSelect, type UnprunedOutputs } from '@compactor/core';
import { pruneToolOutputs } from '@compactor/db';
import type { Attempt } from '../attempt';
import { pruneByCharEstimate } from '../prune-by-estimate';
import type { WorkflowResources } from '../resources';

/**
 * What the prune step marked (`tokens`: output tokens saved); `skipped`: `policy` when `prune` is
 * off, `too-little-output` when the view's unpruned outputs could not make a selection worth it.
 */
export interface PruneOutcome {
  parts: number;
  tokens: number;
  /** Output tokens that were candidates (when `parts` is 0 this says why); null when not selected. */
  candidateTokens: number | null;
  skipped: 'policy' | 'too-little-output' | null;
}

/**
 * The prune step's outcome when it needs no statement: `prune` is off, or the whole view's
 * outputs (the first attempt's stats) bound the covered range's and even they cannot make a
 * selection worth it (core pruneCouldSelect). Null when the selection must run.
 */
export function prunePassed(attempt: Attempt, unprunedOutputs: UnprunedOutputs | null): PruneOutcome | null {
  if (!attempt.policy.prune) return { parts: 0, tokens: 0, candidateTokens: null, skipped: 'policy' };
  if (unprunedOutputs && !pruneCouldSelect(attempt.policy, unprunedOutputs)) {
    return { parts: 0, tokens: 0, candidateTokens: null, skipped: 'too-little-output' };
  }
  return null;
}

/**
 * OpenCode's prune inside a compaction, over the covered range only: selection (core's rule,
 * in SQL) and marks in one statement, so no output is loaded. Run only when {@link prunePassed}
 * says the step has work. Repeating it is harmless: the walk stops at the marks it wrote, and a
 * mark that exists already is not counted again. Where the marks lie is not kept: finalize flags
 * them for recall from the compaction's kept range, whichever attempt wrote them.
 */
export async function pruneStep(resources: WorkflowResources, attempt: Attempt): Promise<PruneOutcome> {
  if (attempt.policy.tokenCount === 'chars') {
    const { markedSeqs: _, ...marked } = await pruneByCharEstimate(resources.db, attempt.session.pk, {
      coversThroughSeq: attempt.coversThroughSeq,
      policy: attempt.policy,
      at: resources.clock(),
      by: attempt.compaction.id,
    });
    return { ...marked, skipped: null };
  }
  const {
    markedSeqs: _,
    savedTokens: __,
    ...marked
  } = await pruneToolOutputs(resources.db, attempt.session.pk, {
    coversThroughSeq: attempt.coversThroughSeq,
    pinSystemMessages: attempt.policy.pinSystemMessages,
    pruning: attempt.policy.pruning,
    at: resources.clock(),
    by: attempt.compaction.id,
  });
  return { ...marked, skipped: null };
}
