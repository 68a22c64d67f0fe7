import { PolicyError, resolvePolicy, selectPrunableParts, type PolicyInput } from '@compactor/core';
import { findSessionByPk, markPartsCompacted } from '@compactor/db';
import { loadCoveredView } from './compaction-view';
import type { WorkflowResources } from './resources';

/** What a prune job did; `skipped` says why it did nothing. */
export interface PruneSessionOutcome {
  parts: number;
  tokens: number;
  skipped: 'session-gone' | 'policy' | 'invalid-policy' | null;
}

/**
 * OpenCode's prune on its own (after a finished assistant turn, or `POST /prune`): select old
 * tool outputs of the current view (pure, core) and mark them in one set-based statement.
 * Idempotent: already-pruned parts stop the selection and are skipped by the update.
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
    policy = resolvePolicy(session.policy as PolicyInput);
  } catch (error) {
    if (error instanceof PolicyError) return { parts: 0, tokens: 0, skipped: 'invalid-policy' };
    throw error;
  }
  if (!policy.prune) return { parts: 0, tokens: 0, skipped: 'policy' };
  const view = await loadCoveredView(resources.db, session.pk, session.lastSeq, policy);
  const selection = selectPrunableParts(view, policy.pruning);
  const marked = await markPartsCompacted(
    resources.db,
    session.pk,
    selection.parts.map((p) => ({ seq: p.seq, callId: p.callId })),
    { at: resources.clock(), by: jobId },
  );
  await resources.events?.publish({
    type: 'prune.completed',
    sessionPk: session.pk,
    sessionId: session.id,
    compactionId: null,
    at: resources.clock().toISOString(),
    data: { jobId, parts: marked.parts, tokens: marked.tokens },
  });
  return { ...marked, skipped: null };
}
