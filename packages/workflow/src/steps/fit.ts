import {
  COMPACTED_MAX_USABLE_SHARE,
  compactionTargetTokens,
  emptyLedger,
  fitFileOps,
  fitLedgerBlock,
  isPinnedMessage,
  mergeLedgers,
  MOVE_BACK_MAX_KEPT_FACTOR,
  storedTokens,
  summaryBudgetTokens,
  usableTokens,
  type ArtifactLedger,
  type Message,
  type Part,
  type PartClamp,
} from '@compactor/core';
import type { StoredClamp } from '@compactor/db';
import type { Attempt } from '../attempt';
import type { WorkflowResources } from '../resources';
import { summaryMessagesFor, tokenizerFor } from './finalize';
import { storedLedgerInForce } from './ledger-in-force';
import type { SummarizeOutcome, SummaryOutcome } from './summary-writing';
import { cutSummary, moveBoundary } from './fit-last-resorts';
import { keptOf, measure, type FitContext, type Fitted } from './fit-measure';

/** The file lists or ledger a summary message renders take at most this share of the summary budget. */
const FILE_LISTS_BUDGET_SHARE = 0.25;

/**
 * The ledger in force before this compaction (the latest completed compaction's), read before the
 * fit step measures: finalize merges the same one into what it stores (a compaction runs alone in
 * its session), so the block measured is the block written.
 */
export async function ledgerInForce(resources: WorkflowResources, attempt: Attempt): Promise<ArtifactLedger> {
  const stored = await storedLedgerInForce(resources, attempt);
  return stored?.ledger ?? emptyLedger();
}

/**
 * Makes a summary outcome fit the model (core fit.ts): the context after it — pinned system
 * messages, the summary messages as finalize will write them (counted exactly), the kept
 * messages — must not exceed the usable input, and should stay under the trigger's point with
 * room for the next turns. Oversized kept parts are clamped; file lists are cut to a share of
 * the summary budget. When even every clampable part at its marker does not fit, the boundary
 * moves forward over the oldest kept messages, which the summary then counts (as the truncate
 * strategy does), and as a last resort the summary text is cut. A compaction that would not
 * make the context smaller than it started is `nothing-to-compact`, not `completed` (messages
 * appended while it ran are not its doing: they land after the boundary either way).
 */
export function fitOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  view: readonly Message[],
  outcome: SummarizeOutcome,
  keepRecentTokens: number,
  previousLedger: ArtifactLedger,
): SummarizeOutcome {
  if (outcome.kind !== 'summary') return outcome;
  const { model, policy } = attempt;
  const usable = usableTokens(model, policy);
  const tokenizer = tokenizerFor(resources, attempt);
  const countText = (text: string) => tokenizer.countSync(text);
  const now = resources.clock();
  const summaryTokens: FitContext['summaryTokens'] = (candidate) =>
    storedTokens(summaryMessagesFor(attempt, candidate, tokenizer, now) as Message[]);
  const pinned = policy.pinSystemMessages ? view.filter(isPinnedMessage) : [];
  const pinnedTokens = storedTokens(pinned);
  // The size the compaction started from (before its prune step), as the row records it.
  const before = attempt.compaction.tokensBefore ?? storedTokens(view);
  const lists = FILE_LISTS_BUDGET_SHARE * summaryBudgetTokens(model, policy);
  const withLedgerBlock = (candidate: SummaryOutcome): SummaryOutcome => ({
    ...candidate,
    ledgerBlock: fitLedgerBlock(
      mergeLedgers(previousLedger, candidate.ledger ?? emptyLedger()),
      lists,
      countText,
    ),
  });
  const bounded = withLedgerBlock({ ...outcome, fileOps: fitFileOps(outcome.fileOps, lists, countText) });

  let fitted: Fitted;
  if (usable === null) {
    fitted = { outcome: bounded, clamps: [], after: 0, fits: true };
    fitted.after = pinnedTokens + summaryTokens(bounded) + storedTokens(keptOf(attempt, view, bounded));
  } else {
    // Kept parts are clamped to the keep budget's bound (split-turn.ts) and to a share of the
    // usable input, so a compaction that clamps leaves room for the next turns instead of
    // stopping at the very edge of the window.
    const room = pinnedTokens + summaryTokens(bounded) + MOVE_BACK_MAX_KEPT_FACTOR * keepRecentTokens;
    const target = Math.min(
      Math.floor(usable * COMPACTED_MAX_USABLE_SHARE),
      compactionTargetTokens(model, policy) ?? usable,
      room,
    );
    const context: FitContext = {
      attempt,
      view,
      pinnedTokens,
      usable,
      target,
      countText,
      summaryTokens,
      withLedgerBlock,
    };
    fitted = measure(context, bounded);
    if (!fitted.fits) fitted = moveBoundary(context, fitted);
    if (!fitted.fits) fitted = cutSummary(context, fitted);
  }
  if (fitted.after >= before) {
    return {
      kind: 'nothing-to-compact',
      reason: `the compaction would not shrink the context (${before} → ${fitted.after} tokens)`,
    };
  }
  const { clamps } = fitted;
  return {
    ...fitted.outcome,
    clamps: clamps.map(toStoredClamp),
    detail: {
      ...fitted.outcome.detail,
      ...(clamps.length > 0
        ? {
            clamped: {
              parts: clamps.length,
              tokens: clamps.reduce((sum, c) => sum + c.tokensBefore - c.tokensAfter, 0),
            },
          }
        : {}),
      ...(fitted.outcome.summaryText !== bounded.summaryText ? { summaryCut: true } : {}),
    },
  } satisfies SummaryOutcome;
}

/** A core clamp as the store keeps it: every content column it replaced, the rest null. */
function toStoredClamp(clamp: PartClamp): StoredClamp {
  const part: Part = clamp.part;
  const replaced = (field: PartClamp['field']) => clamp.fields.includes(field);
  const tool = part.type === 'tool' ? part : null;
  return {
    seq: clamp.seq,
    idx: clamp.index,
    field: clamp.field,
    tokens: part.tokens,
    outputTokens: tool ? tool.outputTokens : 0,
    text: part.type === 'text' || part.type === 'reasoning' ? part.text : null,
    toolInput: tool && replaced('input') ? tool.input : null,
    toolOutput: tool && replaced('output') ? tool.output : null,
    toolError: tool && replaced('error') ? tool.error : null,
  };
}
