import { selectPrunableParts, type Message } from '@compactor/core';
import { markPartsCompacted } from '@compactor/db';
import type { Attempt } from '../attempt';
import { loadCoveredView } from '../compaction-view';
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
 * OpenCode's prune inside a compaction: select old tool outputs (pure, core) and mark them in
 * one set-based statement. Repeating it is harmless: already-pruned parts stop the selection
 * and are skipped by the update.
 */
export async function pruneStep(resources: WorkflowResources, attempt: Attempt): Promise<PruneOutcome> {
  if (!attempt.policy.prune) return { parts: 0, tokens: 0, candidateTokens: 0, skipped: 'policy' };
  const at = resources.clock();
  const view = await loadCoveredView(
    resources.db,
    attempt.session.pk,
    attempt.coversThroughSeq,
    attempt.policy,
  );
  const selection = selectPrunableParts(view, attempt.policy.pruning);
  const marked = await markPartsCompacted(
    resources.db,
    attempt.session.pk,
    selection.parts.map((p) => ({ seq: p.seq, callId: p.callId })),
    { at, by: attempt.compaction.id },
  );
  attempt.view = withMarks(view, selection.parts, at);
  return { ...marked, candidateTokens: selection.candidateTokens, skipped: null };
}

/** The view with the selected outputs marked pruned, as the database now has them. */
function withMarks(
  view: Message[],
  marked: ReadonlyArray<{ seq: number; callId: string }>,
  at: Date,
): Message[] {
  if (marked.length === 0) return view;
  const keys = new Set(marked.map((p) => `${p.seq}:${p.callId}`));
  const compactedAt = at.toISOString();
  return view.map((message) =>
    message.parts.some((p) => p.type === 'tool' && keys.has(`${message.seq}:${p.callId}`))
      ? {
          ...message,
          parts: message.parts.map((p) =>
            p.type === 'tool' &&
            p.status === 'completed' &&
            p.compactedAt === null &&
            keys.has(`${message.seq}:${p.callId}`)
              ? { ...p, compactedAt }
              : p,
          ),
        }
      : message,
  );
}
