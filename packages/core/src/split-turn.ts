/**
 * Split turns and the compaction plan (Opal `detect_split_turn`, klaude-code `_is_split_task`).
 *
 * When the cut lands inside a turn (a user message followed by many assistant and tool
 * messages), summarising part of the turn with the history and keeping the rest reads as
 * nonsense. A prefix of at least `splitTurnMinPrefix` messages (Opal: 5) gets its own summary
 * job: one for the history before the turn, one for the turn's prefix. A shorter prefix is not
 * worth a summary: by default (`splitTurnShortPrefix: 'keep'`) the cut moves back to the turn's
 * user message and the prefix is kept verbatim — but only when that keeps at most
 * {@link MOVE_BACK_MAX_KEPT_FACTOR} × the keep budget, and never for an emergency (`force`):
 * a short prefix can be huge (one 100k tool output), and keeping it would leave the context
 * over the threshold and re-fire the compaction. Otherwise, and with Opal's code
 * (`'summarize'`), the prefix is summarised with the history. For the same reason a mid-turn
 * cut whose first kept message alone breaks that bound (the message that crossed the budget is
 * a giant tool output) moves one message forward: the giant is summarised, not kept.
 *
 * A cut never passes a tool call of the current turn (after the newest user message) that is
 * still pending or running: its result may arrive while the summary is written, and it must then
 * land in a kept message, not behind the boundary in neither the summary nor the view.
 *
 * Pinned system messages (policy `pinSystemMessages`) are taken out of the view first: they are
 * never compacted and do not count toward the keep budget.
 */
import { isPinnedMessage } from './context';
import { findCutPoint, isTurnStart, type CutKind } from './cut-point';
import type { Message } from './model';
import type { Policy } from './policy';
import { countLeadingSummaryMessages } from './summary-messages';
import { storedTokens } from './tokens';
import { tokenMeasureFor } from './token-measure';

/**
 * A short split-turn prefix is kept verbatim (the cut moved back to the turn start) only while
 * the kept part stays within this many keep budgets.
 */
export const MOVE_BACK_MAX_KEPT_FACTOR = 2;

/**
 * How the kept part begins: at a turn start (`clean`), mid-turn with a separately summarised
 * prefix (`split`), at the turn start the cut was moved back to (`moved-to-turn-start`), or
 * mid-turn with the short prefix summarised with the history (`prefix-in-history`).
 */
export type SplitKind = 'clean' | 'split' | 'moved-to-turn-start' | 'prefix-in-history';

/** How a compaction slices its view: what to summarise, what to keep verbatim, and the boundary to record. */
export interface CompactionPlan {
  /** Index of the first kept message in the view (`messages`, pinned messages included). */
  cutIndex: number;
  /** Seq of the first kept message (the compaction's boundary); `null` when nothing is kept. */
  boundarySeq: number | null;
  /** Messages for the history summary; previous summary messages come first (merge, don't re-summarise). */
  history: Message[];
  /** The split turn's compacted prefix, summarised on its own; `null` when the cut is not split. */
  turnPrefix: Message[] | null;
  /** Messages kept verbatim after the summary (pinned ones excluded). */
  kept: Message[];
  /**
   * The view's pinned system messages, in view order: in none of the slices above, never
   * compacted; the context view shows those before the boundary first.
   */
  pinned: Message[];
  /** Stored tokens of `kept` (`storedTokens`); fit.ts clamps the kept part when it is too big. */
  keptTokens: number;
  cut: CutKind;
  split: SplitKind;
}

/** Inputs of {@link planCompaction}; `keepRecentTokens` usually comes from `keepRecentTokensFor`. */
export interface PlanOptions {
  keepRecentTokens: number;
  force?: boolean;
  /** `pinSystemMessages` defaults to `true`, `keepRecent.cutWhen` to `reached`. */
  policy: Pick<Policy, 'cutAt' | 'splitTurnMinPrefix' | 'splitTurnShortPrefix' | 'strategy' | 'topic'> &
    Partial<Pick<Policy, 'pinSystemMessages' | 'tokenCount'>> & {
      keepRecent?: Pick<Policy['keepRecent'], 'cutWhen'>;
    };
}

/** Whether a message holds a tool call still pending or running. */
function hasUnfinishedCall(message: Message): boolean {
  return message.parts.some((p) => p.type === 'tool' && (p.status === 'pending' || p.status === 'running'));
}

/**
 * Index of the first message of the current turn (from the newest user message on, or from
 * `start` without one) that holds an unfinished call; `messages.length` when none does.
 */
function firstUnfinishedOfCurrentTurn(messages: readonly Message[], start: number): number {
  let turnStart = start;
  for (let index = messages.length - 1; index >= start; index--) {
    if (isTurnStart(messages[index]!)) {
      turnStart = index;
      break;
    }
  }
  for (let index = turnStart; index < messages.length; index++) {
    if (hasUnfinishedCall(messages[index]!)) return index;
  }
  return messages.length;
}

/** Index of the user message that opened the turn containing `cut`, not before `start`; -1 if none. */
function turnStartBefore(messages: readonly Message[], cut: number, start: number): number {
  for (let index = cut - 1; index >= start; index--) if (isTurnStart(messages[index]!)) return index;
  return -1;
}

interface Slices {
  cutIndex: number;
  history: Message[];
  turnPrefix: Message[] | null;
  kept: Message[];
  cut: CutKind;
  split: SplitKind;
}

function slices(
  messages: readonly Message[],
  cutIndex: number,
  cut: CutKind,
  split: SplitKind,
  turnStart = -1,
): Slices {
  const isSplit = split === 'split';
  return {
    cutIndex,
    history: messages.slice(0, isSplit ? turnStart : cutIndex),
    turnPrefix: isSplit ? messages.slice(turnStart, cutIndex) : null,
    kept: messages.slice(cutIndex),
    cut,
    split,
  };
}

/** Where the cut lands in the unpinned view, and how the split turn is handled. */
function planSlices(messages: readonly Message[], options: PlanOptions): Slices | null {
  const { policy } = options;
  const force = options.force ?? false;
  // The budget and its bounds in the policy's measure (`tokenCount`); `keptTokens` of the plan
  // stays in stored tokens, what the emergency room is checked against.
  const measure = tokenMeasureFor(policy.tokenCount);
  const point = findCutPoint(messages, {
    measure,
    keepRecentTokens: options.keepRecentTokens,
    force,
    cutAt: policy.cutAt,
    cutWhen: policy.keepRecent?.cutWhen ?? 'reached',
    minKeptUserTurns: policy.strategy === 'topic' ? policy.topic.minVerbatimExchanges : 0,
  });
  if (point === null) return null;
  let { index: cutIndex, kind, keptTokens } = point;
  const bound = MOVE_BACK_MAX_KEPT_FACTOR * options.keepRecentTokens;
  if (kind === 'mid-turn' && keptTokens > bound && cutIndex + 1 < messages.length) {
    // The message at the budget point alone breaks the budget (one giant tool output): keeping
    // it would leave the context as full as it was. It is summarised; what follows it is kept.
    keptTokens -= measure.message(messages[cutIndex]!);
    cutIndex += 1;
    kind = isTurnStart(messages[cutIndex]!) ? 'turn-start' : 'mid-turn';
  }
  const start = countLeadingSummaryMessages(messages);
  const floor = firstUnfinishedOfCurrentTurn(messages, start);
  if (cutIndex > floor) {
    if (floor <= start) return null;
    for (let index = floor; index < cutIndex; index++) keptTokens += measure.message(messages[index]!);
    cutIndex = floor;
    kind = isTurnStart(messages[cutIndex]!) ? 'turn-start' : 'mid-turn';
  }
  if (isTurnStart(messages[cutIndex]!)) return slices(messages, cutIndex, kind, 'clean');

  const turnStart = turnStartBefore(messages, cutIndex, start);
  // The turn began before the previous compaction's cut: nothing of it is left to split off.
  if (turnStart === -1) return slices(messages, cutIndex, kind, 'prefix-in-history');
  if (cutIndex - turnStart >= policy.splitTurnMinPrefix) {
    return slices(messages, cutIndex, kind, 'split', turnStart);
  }
  // Moving back must still compact something new, never undo an emergency, and keep the kept
  // part near the budget (else the compaction would leave the context as full as it found it).
  if (policy.splitTurnShortPrefix === 'keep' && !force && turnStart > start) {
    let keptIfMoved = keptTokens;
    for (let index = turnStart; index < cutIndex; index++) keptIfMoved += measure.message(messages[index]!);
    if (keptIfMoved <= bound) {
      return slices(messages, turnStart, 'turn-start', 'moved-to-turn-start');
    }
  }
  return slices(messages, cutIndex, kind, 'prefix-in-history');
}

/**
 * Plan a compaction of a context view (pinned system messages and the previous summary first,
 * then kept and newer messages): where to cut, what each summary job covers, what is kept.
 * `null` when there is nothing to compact (see `findCutPoint`), or when the current turn's
 * unfinished calls begin right after the previous summary. `history`, `turnPrefix` and `kept`
 * are consecutive slices of the view without its pinned messages. A kept part too big for the
 * window (one giant output) is clamped after the summary is written (fit.ts).
 */
export function planCompaction(messages: readonly Message[], options: PlanOptions): CompactionPlan | null {
  const { policy } = options;
  const pinOn = policy.pinSystemMessages ?? true;
  const pinned = pinOn ? messages.filter(isPinnedMessage) : [];
  const unpinned = pinned.length === 0 ? messages : messages.filter((message) => !isPinnedMessage(message));
  const planned = planSlices(unpinned, options);
  if (planned === null) return null;

  const keptTokens = storedTokens(planned.kept);
  const first = planned.kept[0];
  return {
    ...planned,
    cutIndex: pinned.length === 0 || first === undefined ? planned.cutIndex : messages.indexOf(first),
    boundarySeq: first?.seq ?? null,
    pinned,
    keptTokens,
  };
}
