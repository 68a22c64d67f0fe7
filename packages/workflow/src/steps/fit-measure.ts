/**
 * Measuring a candidate outcome of the fit step (./fit.ts): the messages it keeps and the clamps
 * and context size it leaves.
 */
import {
  applyMediaBudget,
  fitKeptMessages,
  isPinnedMessage,
  mediaBudgetOf,
  usableTokens,
  type Message,
  type PartClamp,
} from '@compactor/core';
import { canonicalJson } from '@compactor/db';
import type { Attempt } from '../attempt';
import type { SummaryOutcome } from './summary-writing';

/** What measuring a candidate outcome needs: the view's parts, the budgets, exact counters. */
export interface FitContext {
  attempt: Attempt;
  view: readonly Message[];
  pinnedTokens: number;
  usable: number;
  /** What the compaction aims for (the trigger's point, and room for the next turns). */
  target: number;
  countText: (text: string) => number;
  summaryTokens: (
    outcome: Pick<SummaryOutcome, 'summaryText' | 'messagesCompacted' | 'fileOps' | 'ledgerBlock'>,
  ) => number;
  /** The outcome with its ledger block rendered: the ledger in force merged with its range's. */
  withLedgerBlock: (outcome: SummaryOutcome) => SummaryOutcome;
}

/** An outcome measured: its clamps and what the context holds after it. */
export interface Fitted {
  outcome: SummaryOutcome;
  clamps: PartClamp[];
  after: number;
  fits: boolean;
}

/**
 * The messages an outcome keeps verbatim: the view's own from its boundary on, their images past
 * the media budget as the markers the context read serves (the newest images are kept, so the
 * budget decides alike over the kept messages as over the whole view).
 */
export function keptOf(attempt: Attempt, view: readonly Message[], outcome: SummaryOutcome): Message[] {
  const pinOn = attempt.policy.pinSystemMessages;
  const kept = view.filter(
    (m) => !m.summary && !(pinOn && isPinnedMessage(m)) && m.seq >= outcome.boundarySeq,
  );
  const media = mediaBudgetOf(attempt.policy, usableTokens(attempt.model, attempt.policy));
  return applyMediaBudget(kept, media).messages;
}

/** The outcome's clamps and the context it leaves. */
export function measure(context: FitContext, outcome: SummaryOutcome): Fitted {
  const kept = keptOf(context.attempt, context.view, outcome);
  const fixedTokens = context.pinnedTokens + context.summaryTokens(outcome);
  const { countText } = context;
  const fit = fitKeptMessages(kept, {
    fixedTokens,
    targetTokens: context.target,
    limitTokens: context.usable,
    count: { text: countText, input: (input) => countText(canonicalJson(input)) },
  });
  return { outcome, clamps: fit.clamps, after: fit.tokensAfter, fits: fit.fits };
}
