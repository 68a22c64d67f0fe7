/**
 * Topic mode (seed 002): decide, from the detector's boundary and two token thresholds, whether
 * to drop a finished topic (truncate-only), replace old messages with a summary (summarize), or
 * do nothing (none).
 *
 * ```
 * │◄─── summarizable zone ───►│◄── verbatim window ──►│
 *                             ▲ verbatimStart
 * ```
 * Truncate-only when the boundary lies inside the verbatim window with enough confidence: the
 * current topic is recent, everything before it goes. Otherwise summarize: everything before the
 * verbatim window is replaced by a summary. Either way at least `minVerbatimExchanges` user
 * messages and the whole current turn stay, and the kept part starts at a user message.
 *
 * Where the seed loses history, this does not: its "no summary → just drop" becomes "the normal
 * summarizer writes it" (the seed's own error path says to skip rather than drop), and a previous
 * summary at the start is never dropped unmerged (DESIGN: merge with the previous summary).
 */
import { isTurnStart } from './cut-point';
import type { Message } from './model';
import { countLeadingSummaryMessages, extractPreviousSummary } from './summary-messages';
import { storedTokens } from './tokens';
import {
  findVerbatimStart,
  mapBoundaryToSession,
  type DetectionWindow,
  type TopicBoundary,
  type TopicSummaryFrom,
} from './topic-detection';
import { DEFAULT_POLICY } from './policy';

/** A message the user wrote (not a compaction's summary or request marker). */
function isUserExchange(message: Message): boolean {
  return message.role === 'user' && !message.summary;
}

/**
 * Moves `keepFrom` back until the kept messages hold at least `minExchanges` user messages, or
 * everything is kept (the seed's minimum exchange guarantee).
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
 * means the last turn), or -1 when there is none. Topic mode has no split-turn summary, so its
 * cut must fall on a turn start, as the normal planner's does.
 */
function turnStartAtOrBefore(messages: readonly Message[], index: number): number {
  for (let i = Math.min(index, messages.length - 1); i >= 0; i -= 1) {
    if (isTurnStart(messages[i] as Message)) return i;
  }
  return -1;
}

/** Seed 002's outcomes: drop the old topic without a summary, summarise it, or compact nothing. */
export type TopicCase = 'truncate-only' | 'summarize' | 'none';

/**
 * Where a topic compaction's summary comes from: the detector's answer (`summaryFrom:
 * 'detector'`, when it covers every dropped message), the normal summarizer (merging the
 * previous summary), or, for truncate-only, the previous summary carried over unchanged.
 */
export type TopicSummarySource = 'detector' | 'summarizer' | 'previous-summary';

/** What a topic compaction does; indices are into `messages`, and `boundarySeq` is the boundary to record. */
export type TopicPlan =
  | { case: 'none'; reason: 'empty' | 'below-trigger' | 'nothing-to-drop' }
  | {
      case: 'truncate-only' | 'summarize';
      /** Index of the first kept message: always a user message, never past the last turn's start. */
      keepFrom: number;
      /** Its seq: the compaction's boundary. */
      boundarySeq: number;
      /** Messages before `keepFrom`, previous summary messages included. */
      droppedMessages: number;
      /**
       * The summary to write as is: the detector's (`summarySource: 'detector'`) or the previous
       * summary carried over (`'previous-summary'`); `null` when the summarizer must write it or
       * there is none.
       */
      summaryText: string | null;
      /**
       * The summary must come from the normal summarizer, over `messages.slice(0, keepFrom)` with
       * `extractPreviousSummary` of them as the previous summary (merge, don't drop).
       */
      needsSummarizer: boolean;
      /** `null`: truncate-only with no previous summary, so no summary message at all. */
      summarySource: TopicSummarySource | null;
      /** The boundary in session indices, `null` if none or rejected. */
      boundaryIndex: number | null;
      verbatimStart: number;
      /** The cut landed inside a turn (or past the last turn's start) and moved back to its user message. */
      movedToTurnStart: boolean;
      /** Whether the minimum exchange guarantee moved `keepFrom` back. */
      extendedForMinExchanges: boolean;
    };

/** Inputs of {@link planTopicCompaction}; pass `triggerTokens: 0` when the trigger was already checked. */
export interface TopicPlanInput {
  /** The context being compacted, in order (a previous summary first). */
  messages: readonly Message[];
  /** The parsed detector answer ({@link parseTopicBoundary}; {@link NO_TOPIC_BOUNDARY} on failure). */
  boundary: TopicBoundary;
  /** The window the detector was shown ({@link buildTopicDetectionRequest}). */
  window: DetectionWindow;
  triggerTokens: number;
  verbatimWindowTokens: number;
  /** Default: the policy's `topic.minConfidence` (0.5). */
  minConfidence?: number;
  /** Default: the policy's `topic.minVerbatimExchanges` (2). */
  minVerbatimExchanges?: number;
  /**
   * Who writes the `summarize` case's summary (policy `topic.summaryFrom`). `summarizer`
   * (default): always the normal summarizer. `detector` (the seed): the detector's summary when
   * it covers every dropped message, else the summarizer.
   */
  summaryFrom?: TopicSummaryFrom;
  /** History size; defaults to the messages' stored counts ({@link storedTokens}). */
  historyTokens?: number;
}

/** Whether topic compaction should run at all: history above the trigger (checked before the LLM call). */
export function topicTriggerReached(
  messages: readonly Message[],
  triggerTokens: number,
  tokens?: number,
): boolean {
  return messages.length > 0 && (tokens ?? storedTokens(messages)) > triggerTokens;
}

/**
 * Whether the detector summarised every message a cut at `keepFrom` drops: it was shown all of
 * them (only the previous summary, given whole, comes before its window) and asked to summarise
 * up to at least `keepFrom`.
 */
function detectorSummaryCovers(window: DetectionWindow, leading: number, keepFrom: number): boolean {
  return typeof window.summaryEnd === 'number' && window.start === leading && keepFrom <= window.summaryEnd;
}

/** The topic-mode case and what it keeps (seed 002, "Compaction Cases"). */
export function planTopicCompaction(input: TopicPlanInput): TopicPlan {
  const { messages, boundary } = input;
  if (messages.length === 0) return { case: 'none', reason: 'empty' };
  if (!topicTriggerReached(messages, input.triggerTokens, input.historyTokens)) {
    return { case: 'none', reason: 'below-trigger' };
  }

  const minConfidence = input.minConfidence ?? DEFAULT_POLICY.topic.minConfidence;
  const verbatimStart = findVerbatimStart(messages, input.verbatimWindowTokens);
  const boundaryIndex = mapBoundaryToSession(boundary.boundaryIndex, input.window);
  const truncateOnly =
    boundaryIndex !== null && boundaryIndex >= verbatimStart && boundary.confidence >= minConfidence;

  const planned = truncateOnly ? boundaryIndex : verbatimStart;
  // Past the last turn's start (an empty verbatim window) this is the last turn's user message:
  // the current turn always stays.
  const turnStart = turnStartAtOrBefore(messages, planned);
  const keepFrom = applyMinVerbatimExchanges(
    messages,
    turnStart,
    input.minVerbatimExchanges ?? DEFAULT_POLICY.topic.minVerbatimExchanges,
  );
  // Dropping nothing, or only the previous summary, is not a compaction.
  const leading = countLeadingSummaryMessages(messages);
  if (turnStart === -1 || keepFrom <= leading) return { case: 'none', reason: 'nothing-to-drop' };

  let summaryText: string | null;
  let summarySource: TopicSummarySource | null;
  if (truncateOnly) {
    // The finished topic goes, but what earlier cycles summarised (constraints, preferences) stays.
    summaryText = leading > 0 ? extractPreviousSummary(messages) : null;
    summarySource = summaryText === null ? null : 'previous-summary';
  } else if (
    input.summaryFrom === 'detector' &&
    boundary.summary.trim() !== '' &&
    detectorSummaryCovers(input.window, leading, keepFrom)
  ) {
    summaryText = boundary.summary.trim();
    summarySource = 'detector';
  } else {
    summaryText = null;
    summarySource = 'summarizer';
  }

  return {
    case: truncateOnly ? 'truncate-only' : 'summarize',
    keepFrom,
    boundarySeq: (messages[keepFrom] as Message).seq,
    droppedMessages: keepFrom,
    summaryText,
    needsSummarizer: summarySource === 'summarizer',
    summarySource,
    boundaryIndex,
    verbatimStart,
    movedToTurnStart: turnStart < planned,
    extendedForMinExchanges: keepFrom < turnStart,
  };
}
