import {
  checkTruncateSummary,
  collectSummaryFacts,
  COMPACTED_MAX_USABLE_SHARE,
  compactionTargetTokens,
  emptyLedger,
  excerptText,
  extractFileOps,
  fitFileOps,
  fitKeptMessages,
  fitLedgerBlock,
  formatCount,
  isPinnedMessage,
  isTurnStart,
  applyMediaBudget,
  ledgerOfMessages,
  mediaBudgetOf,
  mergeFileOps,
  mergeLedgers,
  MIN_EXCERPT_TOKENS,
  MOVE_BACK_MAX_KEPT_FACTOR,
  PINNED_OPEN,
  storedTokens,
  summaryBudgetTokens,
  usableTokens,
  type ArtifactLedger,
  type Message,
  type Part,
  type PartClamp,
} from '@compactor/core';
import { canonicalJson, type StoredClamp } from '@compactor/db';
import type { Attempt } from '../attempt';
import { CompactionFailedError } from '../errors';
import type { WorkflowResources } from '../resources';
import { summaryMessagesFor, tokenizerFor } from './finalize';
import { storedLedgerInForce } from './ledger-in-force';
import type { SummarizeOutcome, SummaryOutcome } from './summary-writing';

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

/** What measuring a candidate outcome needs: the view's parts, the budgets, exact counters. */
interface FitContext {
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
interface Fitted {
  outcome: SummaryOutcome;
  clamps: PartClamp[];
  after: number;
  fits: boolean;
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

/**
 * The messages an outcome keeps verbatim: the view's own from its boundary on, their images past
 * the media budget as the markers the context read serves (the newest images are kept, so the
 * budget decides alike over the kept messages as over the whole view).
 */
function keptOf(attempt: Attempt, view: readonly Message[], outcome: SummaryOutcome): Message[] {
  const pinOn = attempt.policy.pinSystemMessages;
  const kept = view.filter(
    (m) => !m.summary && !(pinOn && isPinnedMessage(m)) && m.seq >= outcome.boundarySeq,
  );
  const media = mediaBudgetOf(attempt.policy, usableTokens(attempt.model, attempt.policy));
  return applyMediaBudget(kept, media).messages;
}

/** The outcome's clamps and the context it leaves. */
function measure(context: FitContext, outcome: SummaryOutcome): Fitted {
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

/**
 * The kept part does not fit even at its markers (two verbatim exchanges holding a hundred tool
 * calls on a 4k window): the boundary moves forward over the fewest oldest kept messages that
 * make it fit, and the summary counts them (the truncate strategy's line, their files, and the
 * pinned facts they state), so they are in neither the view nor lost without a trace. It never
 * passes a call still running in the current turn. Found by bisection: fewer messages kept
 * never makes the context larger.
 */
function moveBoundary(context: FitContext, fitted: Fitted): Fitted {
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
function cutSummary(context: FitContext, fitted: Fitted): Fitted {
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
