/**
 * The fit step's last resorts (./fit.ts), when clamping every kept part is not enough: the
 * boundary moved over the oldest kept messages, then the summary text cut.
 */
import {
  checkTruncateSummary,
  collectSummaryFacts,
  emptyLedger,
  excerptText,
  extractFileOps,
  formatCount,
  isPinnedMessage,
  isTurnStart,
  ledgerOfMessages,
  mergeFileOps,
  mergeLedgers,
  MIN_EXCERPT_TOKENS,
  PINNED_OPEN,
  summaryBudgetTokens,
  type Message,
} from '@compactor/core';
import { CompactionFailedError } from '../errors';
import { keptOf, measure, type FitContext, type Fitted } from './fit-measure';
import type { SummaryOutcome } from './summary-writing';

/**
 * The kept part does not fit even at its markers (two verbatim exchanges holding a hundred tool
 * calls on a 4k window): the boundary moves forward over the fewest oldest kept messages that
 * make it fit, and the summary counts them (the truncate strategy's line, their files, and the
 * pinned facts they state), so they are in neither the view nor lost without a trace. It never
 * passes a call still running in the current turn. Found by bisection: fewer messages kept
 * never makes the context larger.
 */
export function moveBoundary(context: FitContext, fitted: Fitted): Fitted {
  const kept = keptOf(context.attempt, context.view, fitted.outcome);
  const limit = firstUnfinishedOfCurrentTurn(kept);
  if (limit < 1) return fitted;
  const at = (dropped: number): Fitted =>
    measure(context, droppingKept(context, fitted.outcome, kept, dropped));
  // When dropping all it may does not fit, nothing fewer will: the summary is cut from there.
  let found = at(limit);
  if (!found.fits) return found;
  let low = 1;
  let high = limit - 1;
  while (low <= high) {
    const middle = Math.floor((low + high) / 2);
    const candidate = at(middle);
    if (candidate.fits) {
      found = candidate;
      high = middle - 1;
    } else {
      low = middle + 1;
    }
  }
  return found;
}

/** The outcome with the first `dropped` kept messages compacted too, counted by the summary. */
function droppingKept(
  context: FitContext,
  outcome: SummaryOutcome,
  kept: readonly Message[],
  dropped: number,
): SummaryOutcome {
  if (dropped === 0) return outcome;
  const { attempt, view } = context;
  const extra = kept.slice(0, dropped);
  const boundarySeq = kept[dropped]?.seq ?? attempt.coversThroughSeq + 1;
  const pinOn = attempt.policy.pinSystemMessages;
  const covered = view.filter((m) => !(pinOn && isPinnedMessage(m)) && (m.summary || m.seq < boundarySeq));
  const fileOps = mergeFileOps(outcome.fileOps, extractFileOps(extra, attempt.policy.fileTools));
  const fileTools = attempt.policy.fileTools;
  const ledger = mergeLedgers(
    outcome.ledger ?? emptyLedger(),
    ledgerOfMessages(extra, fileTools ? { fileTools } : {}),
  );
  const checked = checkTruncateSummary(extra, {
    ...(outcome.summaryText !== null ? { previousSummary: outcome.summaryText } : {}),
    fileOps,
    fileTools: attempt.policy.fileTools,
    facts: collectSummaryFacts(covered, {
      instructions: attempt.compaction.instructions,
      kept: kept.slice(dropped),
    }),
    budgetTokens: summaryBudgetTokens(attempt.model, attempt.policy),
  });
  return context.withLedgerBlock({
    ...outcome,
    summaryText: checked.text,
    boundarySeq,
    messagesCompacted: outcome.messagesCompacted + extra.length,
    fileOps,
    ledger,
    unlistedConstraints: checked.unlistedConstraints,
    detail: { ...outcome.detail, keptMessagesTruncated: dropped },
  });
}

/** Index in `kept` of the current turn's first message with a call still pending or running. */
function firstUnfinishedOfCurrentTurn(kept: readonly Message[]): number {
  let turnStart = 0;
  for (let index = kept.length - 1; index >= 0; index--) {
    if (isTurnStart(kept[index]!)) {
      turnStart = index;
      break;
    }
  }
  for (let index = turnStart; index < kept.length; index++) {
    const unfinished = kept[index]!.parts.some(
      (p) => p.type === 'tool' && (p.status === 'pending' || p.status === 'running'),
    );
    if (unfinished) return index;
  }
  // Keep the newest message at least: it is the turn the agent is in.
  return Math.max(0, kept.length - 1);
}

/**
 * Every clampable part is at its marker and the boundary can move no further: the summary text
 * gives up what it must, its pinned section (the goal, the constraints: core summary-check.ts)
 * last. The model's text keeps its head and tail around a marker; when even the pinned section
 * does not fit, the whole text is cut the same way (the marker alone below
 * {@link MIN_EXCERPT_TOKENS}). Fails `kept_messages_cannot_fit` when even that is not enough
 * (a newest message of a thousand calls, or of file parts, which cannot be clamped): unlike the
 * pinned system messages' `context_cannot_fit`, the next append's compaction may cut past it.
 */
export function cutSummary(context: FitContext, fitted: Fitted): Fitted {
  const { outcome } = fitted;
  const keptAfter = fitted.after - context.pinnedTokens - context.summaryTokens(outcome);
  const text = outcome.summaryText;
  // What the summary messages take without their text: the framing and the file lists.
  const overhead = context.summaryTokens({ ...outcome, summaryText: '' });
  if (text !== null) {
    const room = context.usable - context.pinnedTokens - keptAfter - overhead;
    const pinnedAt = text.lastIndexOf(PINNED_OPEN);
    const pinned = pinnedAt === -1 ? '' : text.slice(pinnedAt);
    const body = pinnedAt === -1 ? text : text.slice(0, pinnedAt).trimEnd();
    const pinnedTokens = pinned === '' ? 0 : context.countText(pinned) + 2;
    const attempts =
      pinned !== '' && room - pinnedTokens >= MIN_EXCERPT_TOKENS
        ? ([(cut: string) => `${cut}\n\n${pinned}`, body, room - pinnedTokens] as const)
        : ([(cut: string) => cut, text, room] as const);
    const [join, cutFrom, cap] = attempts;
    const marker = (omitted: number) =>
      `[... summary cut to fit the context window: ${formatCount(omitted)} of ${formatCount(cutFrom.length)} characters left out]`;
    const cut = excerptText(cutFrom, cap < MIN_EXCERPT_TOKENS ? 0 : cap, {
      textTokens: context.countText(cutFrom),
      count: context.countText,
      marker,
    });
    const shortened = { ...outcome, summaryText: join(cut.text) };
    const after = context.pinnedTokens + context.summaryTokens(shortened) + keptAfter;
    if (after <= context.usable) return { ...fitted, outcome: shortened, after, fits: true };
  }
  throw new CompactionFailedError(
    'kept_messages_cannot_fit',
    `the newest messages take ${keptAfter} tokens even clamped, the pinned system messages ` +
      `${context.pinnedTokens}, the summary's framing and file lists ${overhead}; ` +
      `the model accepts ${context.usable}`,
  );
}
