import { PolicyError, type PolicyInput } from '@compactor/core';
import { findSessionByPk, pruneToolOutputs } from '@compactor/db';
import { pruneByCharEstimate } from './prune-by-estimate';
import type { WorkflowResources } from './resources';
import { announceEvent } from './session-events';
import { resolveStoredPolicy } from './stored-policy';

/** What a prune job did; `skipped` says why it did nothing. */
export interface PruneSessionOutcome {
  parts: number;
  tokens: number;
  skipped: 'session-gone' | 'policy' | 'invalid-policy' | null;
}

/**
 * OpenCode's prune on its own (after a finished assistant turn, or `POST /prune`), over the
 * whole current view: selection (core's rule, in SQL) and marks in one statement, so no output
 * is loaded. Idempotent: already-pruned parts stop the selection, and a concurrent prune's marks
 * are not counted twice.
 */
export async function pruneSession(
  resources: WorkflowResources,
  sessionPk: number,
  { jobId }: { jobId: string },
): Promise<PruneSessionOutcome> {
  const session = await findSessionByPk(resources.db, sessionPk);
  if (!session) return { parts: 0, tokens: 0, skipped: 'session-gone' };
  let policy;
  try {
    policy = resolveStoredPolicy(session.policy as PolicyInput);
  } catch (error) {
    if (error instanceof PolicyError) return { parts: 0, tokens: 0, skipped: 'invalid-policy' };
    throw error;
  }
  if (!policy.prune) return { parts: 0, tokens: 0, skipped: 'policy' };
  const { parts, tokens } =
    policy.tokenCount === 'chars'
      ? await pruneByCharEstimate(resources.db, session.pk, {
          coversThroughSeq: session.lastSeq,
          policy,
          at: resources.clock(),
          by: jobId,
        })
      : await pruneToolOutputs(resources.db, session.pk, {
          coversThroughSeq: session.lastSeq,
          pinSystemMessages: policy.pinSystemMessages,
          pruning: policy.pruning,
          at: resources.clock(),
          by: jobId,
        });
  if (resources.events) {
    await announceEvent(
      resources.events,
      resources.clock(),
      { session, compactionId: null },
      'prune.completed',
      { jobId, parts, tokens },
    );
  }
  return { parts, tokens, skipped: null };
}
