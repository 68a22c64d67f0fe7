import {
  compactionTargetTokens,
  excerptText,
  fitKeptMessages,
  formatCount,
  isPinnedMessage,
  MIN_EXCERPT_TOKENS,
  storedTokens,
  usableTokens,
  type Message,
  type Part,
  type PartClamp,
} from '@compactor/core';
import { canonicalJson, type StoredClamp } from '@compactor/db';
import type { Attempt } from '../attempt';
import { CompactionFailedError } from '../errors';
import type { WorkflowResources } from '../resources';
import { summaryMessagesFor, tokenizerFor } from './finalize';
import type { SummarizeOutcome, SummaryOutcome } from './summary-writing';

/**
 * Makes a summary outcome fit the model (core fit.ts): the context after it — pinned system
 * messages, the summary messages as finalize will write them (counted exactly), the kept
 * messages — must not exceed the usable input, and should stay under the trigger's point.
 * Kept parts too big for that are clamped; when even every clampable part at its marker does
 * not fit, the summary is cut to the room that is left. A compaction that would not make the
 * context smaller than it started is `nothing-to-compact` instead of `completed` (messages
 * appended while it ran are not its doing: they land after the boundary either way).
 */
export function fitOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  view: readonly Message[],
  outcome: SummarizeOutcome,
): SummarizeOutcome {
  if (outcome.kind !== 'summary') return outcome;
  const { model, policy } = attempt;
  const pinOn = policy.pinSystemMessages;
  const pinned = pinOn ? view.filter(isPinnedMessage) : [];
  const kept = view.filter(
    (m) => !m.summary && !(pinOn && isPinnedMessage(m)) && m.seq >= outcome.boundarySeq,
  );
  const tokenizer = tokenizerFor(resources, attempt);
  const countText = (text: string) => tokenizer.countSync(text);
  const summaryTokens = (summaryText: string | null) =>
    storedTokens(
      summaryMessagesFor(attempt, { ...outcome, summaryText }, tokenizer, resources.clock()) as Message[],
    );
  // The size the compaction started from (before its prune step), as the row records it.
  const before = attempt.compaction.tokensBefore ?? storedTokens(view);
  const pinnedTokens = storedTokens(pinned);

  const usable = usableTokens(model, policy);
  let summaryText = outcome.summaryText;
  let clamps: PartClamp[] = [];
  let after = pinnedTokens + summaryTokens(summaryText) + storedTokens(kept);
  if (usable !== null) {
    const target = Math.min(usable, compactionTargetTokens(model, policy) ?? usable);
    const fit = fitKeptMessages(kept, {
      fixedTokens: after - storedTokens(kept),
      targetTokens: target,
      limitTokens: usable,
      count: { text: countText, input: (input) => countText(canonicalJson(input)) },
    });
    clamps = fit.clamps;
    after = fit.tokensAfter;
    if (!fit.fits) {
      // Every clampable part is at its marker: the summary gives up what it must.
      const keptAfter = fit.tokensAfter - (pinnedTokens + summaryTokens(summaryText));
      summaryText = cutSummary(summaryText, usable - pinnedTokens - keptAfter, summaryTokens, countText);
      after = pinnedTokens + summaryTokens(summaryText) + keptAfter;
      if (after > usable) {
        throw new CompactionFailedError(
          'context_cannot_fit',
          `the newest messages take ${keptAfter} tokens even clamped, the pinned system messages ` +
            `${pinnedTokens}; the model accepts ${usable}`,
        );
      }
    }
  }
  if (after >= before) {
    return {
      kind: 'nothing-to-compact',
      reason: `the compaction would not shrink the context (${before} → ${after} tokens)`,
    };
  }
  return {
    ...outcome,
    summaryText,
    clamps: clamps.map(toStoredClamp),
    detail: {
      ...outcome.detail,
      ...(clamps.length > 0
        ? {
            clamped: {
              parts: clamps.length,
              tokens: clamps.reduce((sum, c) => sum + c.tokensBefore - c.tokensAfter, 0),
            },
          }
        : {}),
      ...(summaryText !== outcome.summaryText ? { summaryCut: true } : {}),
    },
  } satisfies SummaryOutcome;
}

/**
 * The summary cut so its messages take at most `room` tokens: head and tail kept around a
 * marker; the marker alone when the room is smaller than {@link MIN_EXCERPT_TOKENS}.
 */
function cutSummary(
  text: string | null,
  room: number,
  summaryTokens: (text: string | null) => number,
  countText: (text: string) => number,
): string | null {
  if (text === null) return null;
  const overhead = summaryTokens('');
  const textTokens = countText(text);
  const cap = Math.max(0, room - overhead);
  const marker = (omitted: number) =>
    `[... summary cut to fit the context window: ${formatCount(omitted)} of ${formatCount(text.length)} characters left out]`;
  return excerptText(text, cap < MIN_EXCERPT_TOKENS ? 0 : cap, {
    textTokens,
    count: countText,
    marker,
  }).text;
}

/** A core clamp as the store keeps it: the replaced content columns, the rest null. */
function toStoredClamp(clamp: PartClamp): StoredClamp {
  const part: Part = clamp.part;
  const stored: StoredClamp = {
    seq: clamp.seq,
    idx: clamp.index,
    field: clamp.field,
    tokens: part.tokens,
    outputTokens: part.type === 'tool' ? part.outputTokens : 0,
    text: null,
    toolInput: null,
    toolOutput: null,
    toolError: null,
  };
  if (part.type === 'text' || part.type === 'reasoning') return { ...stored, text: part.text };
  if (part.type !== 'tool') return stored;
  switch (clamp.field) {
    case 'output':
      return { ...stored, toolOutput: part.output };
    case 'error':
      return { ...stored, toolError: part.error };
    case 'input':
      return { ...stored, toolInput: part.input };
    default:
      return stored;
  }
}
