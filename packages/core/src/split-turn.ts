/**
 * Split turns and the compaction plan (Opal `detect_split_turn`, klaude-code `_is_split_task`).
 *
 * When the cut lands inside a turn (a user message followed by many assistant and tool
 * messages), summarising part of the turn with the history and keeping the rest reads as
 * nonsense. A prefix of at least `splitTurnMinPrefix` messages (Opal: 5) gets its own summary
 * job: one for the history before the turn, one for the turn's prefix. A shorter prefix is not
 * worth a summary: by default (`splitTurnShortPrefix: 'keep'`) the cut moves back to the turn's
 * user message and the prefix is kept verbatim; Opal's code (`'summarize'`) summarises it with
 * the history instead. A forced (emergency) cut never moves back: it must free room.
 */
import { countLeadingSummaryMessages } from './summary-messages';
import { findCutPoint, isTurnStart, splitsToolCallPairs, type CutKind } from './cut-point';
import type { Message } from './model';
import type { Policy } from './policy';

/**
 * How the kept part begins: at a turn start (`clean`), mid-turn with a separately summarised
 * prefix (`split`), at the turn start the cut was moved back to (`moved-to-turn-start`), or
 * mid-turn with the short prefix summarised with the history (`prefix-in-history`).
 */
export type SplitKind = 'clean' | 'split' | 'moved-to-turn-start' | 'prefix-in-history';

export interface CompactionPlan {
  /** Index of the first kept message in the view. */
  cutIndex: number;
  /** Seq of the first kept message (the compaction's boundary); `null` when nothing is kept. */
  boundarySeq: number | null;
  /** Messages for the history summary; previous summary messages come first (merge, don't re-summarise). */
  history: Message[];
  /** The split turn's compacted prefix, summarised on its own; `null` when the cut is not split. */
  turnPrefix: Message[] | null;
  /** Messages kept verbatim after the summary. */
  kept: Message[];
  cut: CutKind;
  split: SplitKind;
}

export interface PlanOptions {
  keepRecentTokens: number;
  force?: boolean;
  policy: Pick<Policy, 'cutAt' | 'splitTurnMinPrefix' | 'splitTurnShortPrefix' | 'strategy' | 'topic'>;
}

/** Index of the user message that opened the turn containing `cut`, not before `start`; -1 if none. */
function turnStartBefore(messages: readonly Message[], cut: number, start: number): number {
  for (let index = cut - 1; index >= start; index--) if (isTurnStart(messages[index]!)) return index;
  return -1;
}

function plan(
  messages: readonly Message[],
  cutIndex: number,
  cut: CutKind,
  split: SplitKind,
  turnStart = -1,
): CompactionPlan {
  const isSplit = split === 'split';
  return {
    cutIndex,
    boundarySeq: messages[cutIndex]?.seq ?? null,
    history: messages.slice(0, isSplit ? turnStart : cutIndex),
    turnPrefix: isSplit ? messages.slice(turnStart, cutIndex) : null,
    kept: messages.slice(cutIndex),
    cut,
    split,
  };
}

/**
 * Plan a compaction of a context view (the previous summary first, then kept and newer
 * messages): where to cut, what each summary job covers, what is kept. `null` when there is
 * nothing to compact (see `findCutPoint`). `history`, `turnPrefix` and `kept` are consecutive
 * slices of `messages`.
 */
export function planCompaction(messages: readonly Message[], options: PlanOptions): CompactionPlan | null {
  const { policy } = options;
  const point = findCutPoint(messages, {
    keepRecentTokens: options.keepRecentTokens,
    force: options.force ?? false,
    cutAt: policy.cutAt,
    minKeptUserTurns: policy.strategy === 'topic' ? policy.topic.minVerbatimExchanges : 0,
  });
  if (point === null) return null;
  const cutIndex = point.index;
  if (isTurnStart(messages[cutIndex]!)) return plan(messages, cutIndex, point.kind, 'clean');

  const start = countLeadingSummaryMessages(messages);
  const turnStart = turnStartBefore(messages, cutIndex, start);
  // The turn began before the previous compaction's cut: nothing of it is left to split off.
  if (turnStart === -1) return plan(messages, cutIndex, point.kind, 'prefix-in-history');
  if (cutIndex - turnStart >= policy.splitTurnMinPrefix) {
    return plan(messages, cutIndex, point.kind, 'split', turnStart);
  }
  // Moving back must still compact something new, keep every call with its result, and not
  // undo an emergency.
  const canMoveBack =
    policy.splitTurnShortPrefix === 'keep' &&
    point.kind !== 'forced' &&
    turnStart > start &&
    !splitsToolCallPairs(messages, turnStart)(turnStart);
  if (canMoveBack) return plan(messages, turnStart, 'turn-start', 'moved-to-turn-start');
  return plan(messages, cutIndex, point.kind, 'prefix-in-history');
}
