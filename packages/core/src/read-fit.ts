/**
 * The context served at read time when the stored view is over the budget (a compaction running
 * or just requested, an append larger than the headroom): a fit computed from the view alone,
 * without the LLM, deterministic, never stored. Each step runs only while the view is still over:
 *
 * 0. **images**, oldest first, become their markers (media/fit-images.ts): a view over because of
 *    screenshots loses old screenshots before any text; the newest image stays;
 * 1. **clear** the outputs the policy's prune selection would clear (prune.ts), oldest first,
 *    rendered exactly as pruned ones (`[Old tool result content cleared — recall <callId>]`);
 * 2. **clamp** oversized parts (above a quarter of the room), oldest first, with fit.ts's excerpts;
 * 3. **drop** the oldest messages after the pinned and summary messages, replaced by one marker
 *    (read-fit-marker.ts) that names how many and pins the goal, constraints and latest request.
 *    A cut falls on a message boundary, so every tool call keeps its result (a tool part holds
 *    both, model.ts); it moves forward to the next user turn when the turn it lands in is not
 *    the newest, so the model never starts reading in the middle of an old turn;
 * 4. when the newest turn alone is still over: **clamp** it down to the budget (fit.ts, markers
 *    included), dropping its oldest steps only if even that is not enough.
 *
 * Pinned system messages and the summary messages are never touched: when the pinned ones alone
 * exceed the budget nothing can fit (`pinnedOver`), and the best effort is served.
 */
import { isPinnedMessage, renderToolPart } from './context';
import { fitKeptMessages, MIN_EXCERPT_TOKENS } from './fit';
import { leaveOutOldestImages } from './media/fit-images';
import type { Message, Part } from './model';
import { selectPrunableParts } from './prune';
import { dropOldest } from './read-fit-drop';
import type { ReadFitOptions } from './read-fit-options';
import { TOKENIZER_MEASURE } from './token-measure';
import { partTokens, storedTokens } from './tokens';

export type { ReadFitOptions } from './read-fit-options';

/** A part above this share of the room (budget minus pinned and summary messages) is oversized. */
export const OVERSIZED_PART_SHARE = 0.25;

/** What {@link fitViewForRead} served and did. */
export interface ReadFit {
  messages: Message[];
  /** Stored count of `messages`. */
  tokens: number;
  /** `tokens <= budgetTokens`. */
  fits: boolean;
  /** The pinned system messages alone exceed the budget: nothing can fit. */
  pinnedOver: boolean;
  /** Images left out (each replaced by its marker), outputs cleared, parts clamped, messages dropped (replaced by the marker). */
  images: number;
  cleared: number;
  clamped: number;
  dropped: number;
}

/**
 * The view fitted to `budgetTokens` (see the module comment). `view` is the assembled, rendered
 * context: pinned system messages, the latest summary messages, then the kept and newer ones.
 */
export function fitViewForRead(view: readonly Message[], options: ReadFitOptions): ReadFit {
  const budget = options.budgetTokens;
  const pinned = (message: Message) => options.pinSystemMessages && isPinnedMessage(message);
  const headLength = leadingFixedCount(view, pinned);
  const head = view.slice(0, headLength);
  let tail = view.slice(headLength);
  const pinnedOver = storedTokens(view.filter(pinned)) > budget;
  const result = (
    messages: Message[],
    counts: Pick<ReadFit, 'images' | 'cleared' | 'clamped' | 'dropped'>,
  ) => {
    const tokens = storedTokens(messages);
    return { messages, tokens, fits: tokens <= budget, pinnedOver, ...counts };
  };
  let total = storedTokens(view);
  if (total <= budget) return result([...view], { images: 0, cleared: 0, clamped: 0, dropped: 0 });

  const images = leaveOutOldestImages(tail, total, budget, pinned);
  tail = images.messages;
  total = images.total;
  if (total <= budget)
    return result([...head, ...tail], { images: images.elided, cleared: 0, clamped: 0, dropped: 0 });
  const cleared =
    options.pruning === null ? { tail, cleared: 0, total } : clearOutputs(head, tail, total, options);
  tail = cleared.tail;
  total = cleared.total;
  const clampedOversized = clampOversized(tail, total, storedTokens(head), pinned, options);
  tail = clampedOversized.tail;
  total = clampedOversized.total;
  const counts = {
    images: images.elided,
    cleared: cleared.cleared,
    clamped: clampedOversized.clamped,
    dropped: 0,
  };
  if (total <= budget) return result([...head, ...tail], counts);

  const dropped = dropOldest(head, tail, pinned, options);
  return result(dropped.messages, {
    ...counts,
    clamped: counts.clamped + dropped.clamped,
    dropped: dropped.dropped,
  });
}

/** Pinned system messages and summary messages at the start of the view. */
function leadingFixedCount(view: readonly Message[], pinned: (message: Message) => boolean): number {
  let count = 0;
  while (count < view.length && (pinned(view[count]!) || view[count]!.summary)) count++;
  return count;
}

/** Step 1: the prune selection's outputs, oldest first, cleared until the view fits. */
function clearOutputs(
  head: readonly Message[],
  tail: readonly Message[],
  total: number,
  options: ReadFitOptions,
): { tail: Message[]; cleared: number; total: number } {
  const selection = selectPrunableParts(
    [...head, ...tail],
    options.pruning!,
    options.measure ?? TOKENIZER_MEASURE,
  );
  const chosen = new Map<string, Set<string>>();
  for (const part of selection.parts)
    chosen.set(part.messageId, (chosen.get(part.messageId) ?? new Set()).add(part.callId));
  let cleared = 0;
  let remaining = total;
  const next = tail.map((message) => {
    const calls = chosen.get(message.id);
    if (calls === undefined) return message;
    const parts = message.parts.map((part): Part => {
      if (remaining <= options.budgetTokens || part.type !== 'tool' || !calls.has(part.callId)) return part;
      if (part.compactedAt !== null || part.status !== 'completed') return part;
      const shown = renderToolPart({ ...part, compactedAt: options.at });
      remaining -= partTokens(part) - partTokens(shown);
      cleared++;
      return shown;
    });
    return { ...message, parts };
  });
  return { tail: next, cleared, total: remaining };
}

/**
 * Step 2: parts above {@link OVERSIZED_PART_SHARE} of the room, oldest first, each cut to what
 * reaching the budget needs but not below that share (fit.ts's excerpts, so they read like the
 * clamps a compaction stores).
 */
function clampOversized(
  tail: readonly Message[],
  total: number,
  headTokens: number,
  pinned: (message: Message) => boolean,
  options: ReadFitOptions,
): { tail: Message[]; clamped: number; total: number } {
  const pinnedInTail = storedTokens(tail.filter(pinned));
  const room = Math.max(0, options.budgetTokens - headTokens - pinnedInTail);
  const cap = Math.max(MIN_EXCERPT_TOKENS, Math.floor(room * OVERSIZED_PART_SHARE));
  let remaining = total;
  let clamped = 0;
  const next = tail.map((message) => {
    if (pinned(message) || remaining <= options.budgetTokens) return message;
    const parts = message.parts.map((part) => {
      const before = partTokens(part);
      if (remaining <= options.budgetTokens || before <= cap) return part;
      const goal = Math.max(cap, before - (remaining - options.budgetTokens));
      const single = { ...message, parts: [part] };
      const fit = fitKeptMessages([single], {
        fixedTokens: 0,
        targetTokens: goal,
        // No markers-only pass: this step only trims the oversized, step 4 goes further.
        limitTokens: before,
        count: options.count,
      });
      const shown = fit.clamps[0]?.part ?? part;
      if (shown === part) return part;
      remaining -= before - partTokens(shown);
      clamped++;
      return shown;
    });
    return { ...message, parts };
  });
  return { tail: next, clamped, total: remaining };
}
