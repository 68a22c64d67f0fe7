import { CHARS_MEASURE, selectPrunableParts, type Policy } from '@compactor/core';
import { markPartsCompacted, type Db, type SeqRange } from '@compactor/db';
import { loadCoveredView } from './compaction-view';

/**
 * OpenCode's prune measured by its own estimate (policy `tokenCount: 'chars'`,
 * `round(length / 4)` per output): core selects over the loaded view, because the SQL selection
 * (`pruneToolOutputs`) sums the stored exact counts. Opt-in, and it reads the view's outputs:
 * the exact path stays the default. `tokens` is what the marks saved, in stored tokens;
 * `markedSeqs` where they lie.
 */
export async function pruneByCharEstimate(
  db: Db,
  sessionPk: number,
  options: {
    coversThroughSeq: number;
    policy: Pick<Policy, 'pinSystemMessages' | 'pruning'>;
    at: Date;
    by: string;
  },
): Promise<{ parts: number; tokens: number; candidateTokens: number; markedSeqs: SeqRange | null }> {
  const view = await loadCoveredView(db, sessionPk, options.coversThroughSeq, options.policy);
  const selection = selectPrunableParts(view, options.policy.pruning, CHARS_MEASURE);
  const marked = await markPartsCompacted(
    db,
    sessionPk,
    selection.parts.map((part) => ({ seq: part.seq, callId: part.callId })),
    { at: options.at, by: options.by },
  );
  return { ...marked, candidateTokens: selection.candidateTokens };
}
