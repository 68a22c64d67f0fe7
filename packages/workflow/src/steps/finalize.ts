import { buildSummaryMessages, emptyLedger, mergeLedgers, type Message } from '@compactor/core';
import {
  completeCompactionFollowedUp,
  contentHash,
  markPrunedRecallable,
  markRecallableBehind,
  recordCompactionCache,
  selectCacheHead,
  firstKeptOf,
  type CompactionRow,
  type CompactionWithOutbox,
  type CompletionMeasured,
  type LedgerEntry,
  type NewMessage,
  type PartPosition,
} from '@compactor/db';
import { encodingForModel, getTokenizer, type Tokenizer } from '@compactor/tokenizer';
import type { Attempt } from '../attempt';
import { cacheEffectOfChange } from '../cache-effect';
import { followUpOf } from '../follow-up';
import { storedLedgerInForce } from './ledger-in-force';
import type { WorkflowResources } from '../resources';
import type { SummarizeOutcome, SummaryOutcome } from './summary-writing';

/** A finalized compaction, and the follow-up its transaction requested (follow-up.ts), if any. */
export interface Finalized {
  completed: CompactionRow;
  followUp: CompactionWithOutbox | null;
  /** What the completion measured for the follow-up decision; null when none could follow. */
  measured: CompletionMeasured | null;
}

/**
 * Writes the summary message(s), the boundary and `completed` in one fenced transaction, which
 * also closes the attempt's finalize `step` record and, when appends outran the compaction,
 * requests the next one (follow-up.ts). The message ids are derived from the compaction id, so
 * a retried finalize writes the same rows. Once completed and sized, the row records its
 * prompt-cache effect (docs/DESIGN.md, "Prompt cache"), measured on the view as it was before
 * the completion.
 */
export async function finalizeStep(
  resources: WorkflowResources,
  attempt: Attempt,
  outcome: Extract<SummarizeOutcome, { kind: 'summary' }>,
  step?: { pk: number; at: Date },
): Promise<Finalized> {
  const { compaction, policy } = attempt;
  const now = resources.clock();
  const summaryMessages = summaryMessagesFor(attempt, outcome, tokenizerFor(resources, attempt), now).map(
    toStoredMessage,
  );
  // The view before the change: what the provider last cached of it, read before it changes,
  // and only as far as that cache reaches (db `selectCacheHead`).
  const carriedOver = carriesSummaryOver(outcome);
  const head = await selectCacheHead(resources.db, attempt.session.pk, {
    pinSystemMessages: policy.pinSystemMessages,
    ...(carriedOver ? { prunedBy: compaction.id, changedFrom: firstClamped(outcome.clamps) } : {}),
  });
  const baseline = {
    pinnedTokens: head.pinnedTokens,
    prefixTokens: head.prefixTokens,
    lastUsage: head.report && { cachedTokens: head.report.cachedTokens, at: head.report.at },
  };
  // What the new boundary puts out of view becomes searchable by recall: flagged here, in
  // windows and outside the completion's transaction, so neither appends nor the completion pay
  // for indexing a long history. Every strategy's boundary (summarize, truncate, topic, a
  // prepared draft, the fit step's move) is completed here; a retry or replan flags again.
  // The outputs its prune step cleared likewise, whichever attempt cleared them: they lie in the
  // view it pruned, from the current first kept seq (unmoved since: a compaction runs alone in
  // its session, and a revert refuses while it does) through the covered range; behind the new
  // boundary the call above flagged every part, and pinned messages before the first kept seq
  // were flagged by the compaction that put them there. So only the kept range is read.
  await markRecallableBehind(
    resources.db,
    attempt.session.pk,
    outcome.boundarySeq,
    undefined,
    firstKeptOf(attempt.latestCompleted),
  );
  if (attempt.noOwnPruneMarks !== true) {
    await markPrunedRecallable(resources.db, attempt.session.pk, compaction.id, {
      first: outcome.boundarySeq,
      last: attempt.coversThroughSeq,
    });
  }
  const ledger = await ledgerToStore(resources, attempt, outcome);
  const { completed, followUp, measured } = await completeCompactionFollowedUp(
    resources.db,
    {
      compactionId: compaction.id,
      fence: attempt.fence,
      sessionPk: attempt.session.pk,
      summaryMessages,
      boundarySeq: outcome.boundarySeq,
      tokensBefore: compaction.tokensBefore ?? 0,
      messagesBefore: compaction.messagesBefore ?? 0,
      model: outcome.llm?.model ?? null,
      usage: outcome.llm?.usage ?? null,
      costUsd: outcome.llm?.costUsd ?? null,
      // How the compaction went, for analysts: the cut or topic decision, who wrote the summary,
      // a fallback and the clamps when they happened.
      details: {
        ...outcome.detail,
        writtenBy: outcome.writtenBy,
        messagesCompacted: outcome.messagesCompacted,
        ...(outcome.fallback ? { fallback: outcome.fallback } : {}),
      },
      clamps: outcome.clamps,
      ledger,
      fallback: outcome.fallback,
      estimate: policy.estimate,
      pinSystemMessages: policy.pinSystemMessages,
      finishedAt: now,
      ...(step ? { step } : {}),
    },
    followUpOf(resources, attempt),
  );
  const tokensBefore = completed.tokensBefore ?? 0;
  const tokensAfter = completed.tokensAfter ?? tokensBefore;
  const cache = cacheEffectOfChange(
    attempt.session,
    baseline,
    {
      tokensBefore,
      tokensAfter,
      // A new summary changes the served context right after the pinned system messages; a
      // carried-over one leaves it alone up to the first part this compaction pruned or clamped.
      unchangedPrefixTokens: carriedOver
        ? (baseline.prefixTokens ?? tokensBefore)
        : Math.min(baseline.pinnedTokens, tokensBefore),
    },
    now,
  );
  const recorded = await recordCompactionCache(resources.db, compaction.id, cache);
  return { completed: recorded ?? completed, followUp, measured };
}

/** Most unlisted constraints kept with a ledger: the oldest beyond these are the least likely to matter. */
const MAX_UNLISTED_CONSTRAINTS = 500;

/**
 * The ledger this compaction leaves in force: the previous completed compaction's merged with
 * the range this one compacted, which the summarize step read anyway. Stored with the completion,
 * in its transaction: the ledger in force is the latest completed compaction's.
 */
async function ledgerToStore(
  resources: WorkflowResources,
  attempt: Attempt,
  outcome: Pick<SummaryOutcome, 'ledger' | 'unlistedConstraints'>,
): Promise<LedgerEntry> {
  const { compaction, session } = attempt;
  const previous = await storedLedgerInForce(resources, attempt);
  const ledger = mergeLedgers(previous?.ledger ?? emptyLedger(), outcome.ledger ?? emptyLedger());
  const unlisted = [
    ...new Set([...(outcome.unlistedConstraints ?? []), ...(previous?.unlistedConstraints ?? [])]),
  ];
  return {
    compactionId: compaction.id,
    sessionPk: session.pk,
    ledger,
    unlistedConstraints: unlisted.slice(0, MAX_UNLISTED_CONSTRAINTS),
  };
}

/**
 * Whether the compaction keeps the boundary and the previous summary as they were (it only
 * clamps kept parts): true unless fitting it moved the boundary over kept messages too.
 */
function carriesSummaryOver(outcome: Pick<SummaryOutcome, 'detail'>): boolean {
  return outcome.detail.clampOnly === true && outcome.detail.keptMessagesTruncated === undefined;
}

/** The clamped part served first (kept parts are served in seq order). */
function firstClamped(clamps: readonly PartPosition[]): PartPosition | null {
  let first: PartPosition | null = null;
  for (const clamp of clamps) {
    if (!first || clamp.seq < first.seq || (clamp.seq === first.seq && clamp.idx < first.idx)) first = clamp;
  }
  return first === null ? null : { seq: first.seq, idx: first.idx };
}

/** Texts whose counts an attempt keeps, at most: the summary message and its blocks. */
const REMEMBERED_COUNTS = 64;

/**
 * The session model's tokenizer, as the store counts parts with it, remembering the attempt's
 * counts: the fit step counts the summary message it measures, and finalize counts the same
 * text again when it stores it (an exact count of the same text is the same count).
 */
export function tokenizerFor(resources: WorkflowResources, attempt: Attempt): Pick<Tokenizer, 'countSync'> {
  const tokenizer =
    resources.tokenizerFor?.(attempt.model.id) ?? getTokenizer(encodingForModel(attempt.model.id));
  const counts = (attempt.textTokens ??= new Map());
  return {
    countSync(text) {
      const known = counts.get(text);
      if (known !== undefined) return known;
      const tokens = tokenizer.countSync(text);
      if (counts.size >= REMEMBERED_COUNTS) counts.clear();
      counts.set(text, tokens);
      return tokens;
    },
  };
}

/**
 * The message(s) a summary outcome writes, counted exactly: what finalize stores and what the
 * fit step measures (none for a cut that drops messages without a summary).
 */
export function summaryMessagesFor(
  attempt: Attempt,
  outcome: Pick<SummaryOutcome, 'summaryText' | 'messagesCompacted' | 'fileOps' | 'ledgerBlock'>,
  tokenizer: Pick<Tokenizer, 'countSync'>,
  now: Date,
): Array<Omit<Message, 'seq'>> {
  if (outcome.summaryText === null) return [];
  const { compaction, policy } = attempt;
  return buildSummaryMessages({
    style: policy.summaryMessage,
    summaryText: outcome.summaryText,
    compactionId: compaction.id,
    auto: compaction.reason !== 'manual',
    messagesCompacted: outcome.messagesCompacted,
    fileOps: outcome.fileOps,
    ...(outcome.ledgerBlock !== undefined ? { ledgerBlock: outcome.ledgerBlock } : {}),
    createdAt: now.toISOString(),
    countTokens: (text) => tokenizer.countSync(text),
  });
}

function toStoredMessage(message: Omit<Message, 'seq'>): NewMessage {
  const { id, createdAt, ...content } = message;
  return { ...content, id, createdAt: new Date(createdAt), contentHash: contentHash(content) };
}
