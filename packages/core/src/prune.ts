/**
 * Which old tool outputs to prune (OpenCode's `prune`, exactly).
 *
 * Walk the context view backwards. Skip everything until the `protectUserTurns`-th user message
 * from the end has been passed (the active conversation). Stop at a summary message (nothing
 * before the previous compaction is in the view anyway) or at an output that is already pruned
 * (everything older was handled by an earlier prune). Among completed tool parts of unprotected
 * tools, the newest `protectTokens` output tokens stay; every older output is a candidate. Prune
 * only when the candidates save strictly more than `minimumTokens`: pruning breaks the provider's
 * prompt cache, so it must happen rarely and in large steps.
 *
 * Sizes are the stored `outputTokens` of each part, never a re-estimate, unless the policy's
 * `tokenCount` is `chars`: then OpenCode's own `Token.estimate(output)` = `round(length / 4)`.
 * This is the reference the set-based SQL implementation in packages/db is checked against.
 */
import type { Message } from './model';
import type { Policy, PruneBudgets } from './policy';
import { TOKENIZER_MEASURE, type TokenMeasure } from './token-measure';

/** One tool output to prune, addressed the way the store addresses it. */
export interface PrunablePart {
  messageId: string;
  seq: number;
  callId: string;
  tool: string;
  /** What pruning it saves (the stored output tokens, or the estimate with a `chars` measure). */
  outputTokens: number;
}

/** What {@link selectPrunableParts} chose, in output tokens; the totals explain an empty choice. */
export interface PruneSelection {
  /** Parts to mark as pruned, oldest first; empty when the saving is not worth it. */
  parts: PrunablePart[];
  /** Output tokens the selection saves: the candidates' sum when above the minimum, else 0. */
  prunedTokens: number;
  /** Output tokens of every candidate, pruned or not (for reporting why nothing was pruned). */
  candidateTokens: number;
  /** Output tokens walked through, protected ones included (OpenCode's `total`). */
  scannedTokens: number;
}

/**
 * Select the tool outputs to prune in a context view (the latest summary first, then the kept
 * and newer messages, in order). Pure: the caller marks the parts (`compactedAt`) and gates on
 * the policy's `prune` switch. `measure` sizes each output (`tokenMeasureFor(policy.tokenCount)`).
 */
export function selectPrunableParts(
  messages: readonly Message[],
  pruning: PruneBudgets,
  measure: TokenMeasure = TOKENIZER_MEASURE,
): PruneSelection {
  const protectedTools = new Set(pruning.protectedTools);
  const candidates: PrunablePart[] = [];
  let scanned = 0;
  let candidateTokens = 0;
  let userTurns = 0;

  walk: for (let messageIndex = messages.length - 1; messageIndex >= 0; messageIndex--) {
    const message = messages[messageIndex]!;
    if (message.role === 'user') userTurns++;
    if (userTurns < pruning.protectUserTurns) continue;
    // OpenCode stops at the assistant summary; in this model every message a compaction wrote
    // (its request marker, or a user/system-style summary) carries `summary: true`.
    if (message.summary) break;
    const parts = message.parts;
    for (let partIndex = parts.length - 1; partIndex >= 0; partIndex--) {
      const part = parts[partIndex]!;
      if (part.type !== 'tool' || part.status !== 'completed') continue;
      if (protectedTools.has(part.tool)) continue;
      if (part.compactedAt !== null) break walk;
      const outputTokens = measure.output(part);
      scanned += outputTokens;
      if (scanned > pruning.protectTokens) {
        candidateTokens += outputTokens;
        // Built while the part is in cache: cheaper than revisiting it (measured, bench/core-prune).
        candidates.push({
          messageId: message.id,
          seq: message.seq,
          callId: part.callId,
          tool: part.tool,
          outputTokens,
        });
      }
    }
  }

  const worthIt = candidateTokens > pruning.minimumTokens;
  return {
    parts: worthIt ? candidates.reverse() : [],
    prunedTokens: worthIt ? candidateTokens : 0,
    candidateTokens,
    scannedTokens: scanned,
  };
}

/** The view's completed tool outputs not yet pruned, in stored output tokens (db context stats). */
export interface UnprunedOutputs {
  /** Their sum. */
  total: number;
  /** The largest one. */
  largest: number;
}

/**
 * Whether {@link selectPrunableParts} could select anything in a view whose unpruned completed
 * tool outputs are `outputs` (stored tokens), decided without the view: a prune is worth running
 * only then. Sound, never a guess: the candidates are the outputs from the one that crosses
 * `protectTokens` on, and the outputs walked before it sum to more than `protectTokens` minus its
 * size, so the candidates save less than `total - protectTokens + largest` (and never more than
 * `total`). When either is at most `minimumTokens`, no selection can be worth it. Protected turns
 * and tools only shrink the walk. The sums are stored counts: under the `chars` measure, which
 * sizes outputs by their text, the answer is always yes.
 */
export function pruneCouldSelect(
  policy: { pruning: PruneBudgets; tokenCount: Policy['tokenCount'] },
  outputs: UnprunedOutputs,
): boolean {
  if (policy.tokenCount === 'chars') return true;
  const { protectTokens, minimumTokens } = policy.pruning;
  return outputs.total > minimumTokens && outputs.total - protectTokens + outputs.largest > minimumTokens;
}
