/**
 * Where topic mode (docs/PRESETS.md, `topic`) cuts: the first kept message for a planned position (the verbatim
 * window's start, or the detector's boundary), by the policy's `cutAt` rule and the reference's
 * minimum exchange guarantee.
 *
 * One function decides it for both the detection request (which names the messages the detector
 * must summarise) and the plan (which keeps the rest): when the two disagreed, a message could be
 * summarised and kept at once. Every message boundary is a safe cut here: a tool part holds its
 * call and its result (model.ts `ToolPart`), so no cut separates them.
 */
import { isTurnStart } from './cut-point';
import type { Message } from './model';
import type { Policy } from './policy';
import { messageTokens } from './tokens';

/** How topic mode aligns a cut: the policy's `cutAt` and `topic.minVerbatimExchanges`. */
export interface TopicCutRules {
  /**
   * `message` (docs/PRESETS.md, `topic`): the planned position itself, any message. `turn-start`: the user
   * message that opens the turn holding it, so the kept part starts with a user message.
   */
  cutAt: Policy['cutAt'];
  /** User messages always kept verbatim (the topic reference's `min_verbatim_exchanges`). */
  minVerbatimExchanges: number;
}

/** A message the user wrote (not a compaction's summary or request marker). */
function isUserExchange(message: Message): boolean {
  return message.role === 'user' && !message.summary;
}

/**
 * Index of the first message of the verbatim window (docs/PRESETS.md, `topic`): scanning back from the newest
 * message, the messages that fit in `verbatimWindowTokens` together. The message that overflows
 * the budget is not in the window (so the window is empty when the newest message alone
 * overflows it). `measure` sizes a message (default: its stored tokens).
 */
export function findVerbatimStart(
  messages: readonly Message[],
  verbatimWindowTokens: number,
  measure: (message: Message) => number = messageTokens,
): number {
  let total = 0;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    total += measure(messages[index] as Message);
    if (total > verbatimWindowTokens) return index + 1;
  }
  return 0;
}

/**
 * Moves `keepFrom` back until the kept messages hold at least `minExchanges` user messages, or
 * everything is kept (the reference's minimum exchange guarantee).
 */
export function applyMinVerbatimExchanges(
  messages: readonly Message[],
  keepFrom: number,
  minExchanges: number,
): number {
  let start = Math.min(Math.max(0, keepFrom), messages.length);
  let users = messages.slice(start).filter(isUserExchange).length;
  while (users < minExchanges && start > 0) {
    start -= 1;
    if (isUserExchange(messages[start] as Message)) users += 1;
  }
  return start;
}

/**
 * The user message that opens the turn containing `index` (at or before it; `index` past the end
 * means the last turn), or -1 when there is none.
 */
function turnStartAtOrBefore(messages: readonly Message[], index: number): number {
  for (let i = Math.min(index, messages.length - 1); i >= 0; i -= 1) {
    if (isTurnStart(messages[i] as Message)) return i;
  }
  return -1;
}

/** A topic cut: the aligned position, then `keepFrom` after the minimum exchange guarantee. */
export interface TopicCut {
  /** The planned position after the `cutAt` rule (before the minimum exchanges). */
  aligned: number;
  /** Index of the first kept message. */
  keepFrom: number;
}

/**
 * The cut for a planned position, `null` when none exists (`turn-start` with no user message at
 * or before it, or no messages). The newest message is always kept: past the end (an empty
 * verbatim window) `message` keeps the newest message and `turn-start` the last turn, where the
 * reference would keep nothing verbatim and leave the model no request to answer.
 */
export function alignTopicCut(
  messages: readonly Message[],
  planned: number,
  rules: TopicCutRules,
): TopicCut | null {
  if (messages.length === 0) return null;
  const aligned =
    rules.cutAt === 'message'
      ? Math.min(Math.max(0, planned), messages.length - 1)
      : turnStartAtOrBefore(messages, planned);
  if (aligned === -1) return null;
  return { aligned, keepFrom: applyMinVerbatimExchanges(messages, aligned, rules.minVerbatimExchanges) };
}

/**
 * Where the `summarize` case cuts: the verbatim window's start, aligned. It does not depend on
 * the detector's answer (a boundary only ever selects truncate-only), so the detection request
 * can ask for a summary of exactly the messages before it.
 */
export function summarizeCaseCut(
  messages: readonly Message[],
  verbatimWindowTokens: number,
  rules: TopicCutRules,
  measure?: (message: Message) => number,
): TopicCut | null {
  return alignTopicCut(messages, findVerbatimStart(messages, verbatimWindowTokens, measure), rules);
}
