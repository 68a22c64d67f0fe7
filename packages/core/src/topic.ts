/**
 * Topic mode (docs/PRESETS.md, `topic`): decide, from the detector's boundary and two token thresholds, whether
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
 * messages and the newest message stay. The cut lands where the reference puts it (`cutAt:
 * 'message'`, the `topic` preset) or at the turn's user message (`turn-start`, the default).
 *
 * What is summarised and what is kept never overlap: the detector is asked to summarise exactly
 * the messages the `summarize` case drops (topic-cut.ts decides both), and its summary is used
 * only when it covers exactly them; otherwise the summarizer writes one over the dropped range.
 *
 * Where the reference loses history, this does not: its "no summary → just drop" becomes "the normal
 * summarizer writes it" (the reference's own error path says to skip rather than drop), and a previous
 * summary at the start is never dropped unmerged (DESIGN: merge with the previous summary).
 */
import type { Message } from './model';
import {
  countLeadingSummaryMessages,
  extractPreviousSummary,
  previousSummaryMessageCount,
} from './summary-messages';
import { storedTokens } from './tokens';
import { alignTopicCut, findVerbatimStart, type TopicCutRules } from './topic-cut';
import {
  mapBoundaryToSession,
  type DetectionWindow,
  type TopicBoundary,
  type TopicSummaryFrom,
} from './topic-detection';
import { DEFAULT_POLICY } from './policy';

export { applyMinVerbatimExchanges } from './topic-cut';

/** The topic reference's outcomes: drop the old topic without a summary, summarise it, or compact nothing. */
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
      /** Index of the first kept message: a user message with `cutAt: 'turn-start'`; never past the newest message. */
      keepFrom: number;
      /** Its seq: the compaction's boundary. */
      boundarySeq: number;
      /** Messages before `keepFrom`, previous summary messages included. */
      droppedMessages: number;
      /**
       * How many messages the summary written covers (its `[History Summary - N earlier
       * messages]`): the dropped ones but previous summaries; for a previous summary carried over
       * unchanged, what it covered before, since the finished topic is dropped without a word.
       */
      summaryCovers: number;
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
      /** The cut moved back from its planned position: to its turn's user message, or to keep the newest message. */
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
  /** Default: the default policy's `cutAt` (`turn-start`); the `topic` preset's is `message` (the reference). */
  cutAt?: TopicCutRules['cutAt'];
  /** Sizes a message for the verbatim window (default: stored tokens; see `tokenMeasureFor`). */
  measure?: (message: Message) => number;
  /**
   * Who writes the `summarize` case's summary (policy `topic.summaryFrom`). `summarizer`
   * (default): always the normal summarizer. `detector` (the reference): the detector's summary when
   * it covers every dropped message, else the summarizer.
   */
  summaryFrom?: TopicSummaryFrom;
  /** History size; defaults to the messages' stored counts ({@link storedTokens}). */
  historyTokens?: number;
}

/**
 * How many messages the written summary stands for (its `[History Summary - N earlier messages]`):
 * a previous summary carried over unchanged covers what it covered before; a new summary (the
 * summarizer's or the detector's, both asked to merge the previous one) covers the previous
 * summary's messages and the newly dropped ones.
 */
function summaryCoverage(
  messages: readonly Message[],
  keepFrom: number,
  leading: number,
  source: TopicSummarySource | null,
): number {
  const previous = leading > 0 ? previousSummaryMessageCount(messages) : null;
  if (source === 'previous-summary') return previous ?? keepFrom - leading;
  return (previous ?? 0) + messages.slice(0, keepFrom).filter((m) => !m.summary).length;
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
 * Whether the detector summarised exactly the messages a cut at `keepFrom` drops: it was shown
 * all of them (only the previous summary, given whole, comes before its window) and asked to
 * summarise up to `keepFrom`, no further (a summary of a message that is also kept would show
 * the model that message twice).
 */
function detectorSummaryCovers(window: DetectionWindow, leading: number, keepFrom: number): boolean {
  return window.summaryEnd === keepFrom && window.start === leading;
}

/** The topic-mode case and what it keeps (docs/PRESETS.md, `topic`). */
export function planTopicCompaction(input: TopicPlanInput): TopicPlan {
  const { messages, boundary } = input;
  if (messages.length === 0) return { case: 'none', reason: 'empty' };
  if (!topicTriggerReached(messages, input.triggerTokens, input.historyTokens)) {
    return { case: 'none', reason: 'below-trigger' };
  }

  const minConfidence = input.minConfidence ?? DEFAULT_POLICY.topic.minConfidence;
  const verbatimStart = findVerbatimStart(messages, input.verbatimWindowTokens, input.measure);
  const boundaryIndex = mapBoundaryToSession(boundary.boundaryIndex, input.window);
  const truncateOnly =
    boundaryIndex !== null && boundaryIndex >= verbatimStart && boundary.confidence >= minConfidence;

  const planned = truncateOnly ? boundaryIndex : verbatimStart;
  const cut = alignTopicCut(messages, planned, {
    cutAt: input.cutAt ?? DEFAULT_POLICY.cutAt,
    minVerbatimExchanges: input.minVerbatimExchanges ?? DEFAULT_POLICY.topic.minVerbatimExchanges,
  });
  // Dropping nothing, or only the previous summary, is not a compaction.
  const leading = countLeadingSummaryMessages(messages);
  if (cut === null || cut.keepFrom <= leading) return { case: 'none', reason: 'nothing-to-drop' };
  const { aligned, keepFrom } = cut;

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
    summaryCovers: summaryCoverage(messages, keepFrom, leading, summarySource),
    summaryText,
    needsSummarizer: summarySource === 'summarizer',
    summarySource,
    boundaryIndex,
    verbatimStart,
    movedToTurnStart: aligned < planned,
    extendedForMinExchanges: keepFrom < aligned,
  };
}
