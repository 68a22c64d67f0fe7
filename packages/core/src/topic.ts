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
 * verbatim window is replaced by the detector's summary (or just dropped when it gave none).
 * Either way at least `minVerbatimExchanges` user messages stay.
 */
import type { Message } from './model';
import { messageTokens, storedTokens } from './tokens';
import { mapBoundaryToSession, type DetectionWindow, type TopicBoundary } from './topic-detection';

/** The seed's defaults (`config/app.json` → `history_compaction`). */
export const TOPIC_DEFAULTS = {
  minConfidence: 0.5,
  minVerbatimExchanges: 2,
  /** The seed's table says 3000 and 6000; its example config uses 4000 and 24000. */
  verbatimWindowTokens: 3000,
  triggerTokens: 6000,
} as const;

/**
 * Index of the first message of the verbatim window: scanning back from the newest message, the
 * messages that fit in `verbatimWindowTokens` together. The message that overflows the budget is
 * not in the window (so the window is empty when the newest message alone overflows it).
 */
export function findVerbatimStart(messages: readonly Message[], verbatimWindowTokens: number): number {
  let total = 0;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    total += messageTokens(messages[index] as Message);
    if (total > verbatimWindowTokens) return index + 1;
  }
  return 0;
}

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

export type TopicCase = 'truncate-only' | 'summarize' | 'none';

export type TopicPlan =
  | { case: 'none'; reason: 'empty' | 'below-trigger' | 'nothing-to-drop' }
  | {
      case: 'truncate-only' | 'summarize';
      /** Index of the first kept message. */
      keepFrom: number;
      /** Its seq: the compaction's boundary (`null` if nothing is kept). */
      boundarySeq: number | null;
      droppedMessages: number;
      /** The detector's summary for `summarize`; `null` for truncate-only or when it gave none. */
      summaryText: string | null;
      /** The boundary in session indices, `null` if none or rejected. */
      boundaryIndex: number | null;
      verbatimStart: number;
      /** Whether the minimum exchange guarantee moved `keepFrom` back. */
      extendedForMinExchanges: boolean;
    };

export interface TopicPlanInput {
  /** The context being compacted, in order. */
  messages: readonly Message[];
  /** The parsed detector answer ({@link parseTopicBoundary}; {@link NO_TOPIC_BOUNDARY} on failure). */
  boundary: TopicBoundary;
  /** The window the detector was shown ({@link buildTopicDetectionRequest}). */
  window: DetectionWindow;
  triggerTokens: number;
  verbatimWindowTokens: number;
  minConfidence?: number;
  minVerbatimExchanges?: number;
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

/** The topic-mode case and what it keeps (seed 002, "Compaction Cases"). */
export function planTopicCompaction(input: TopicPlanInput): TopicPlan {
  const { messages, boundary } = input;
  if (messages.length === 0) return { case: 'none', reason: 'empty' };
  if (!topicTriggerReached(messages, input.triggerTokens, input.historyTokens)) {
    return { case: 'none', reason: 'below-trigger' };
  }

  const minConfidence = input.minConfidence ?? TOPIC_DEFAULTS.minConfidence;
  const verbatimStart = findVerbatimStart(messages, input.verbatimWindowTokens);
  const boundaryIndex = mapBoundaryToSession(boundary.boundaryIndex, input.window);
  const truncateOnly =
    boundaryIndex !== null && boundaryIndex >= verbatimStart && boundary.confidence >= minConfidence;

  const planned = truncateOnly ? boundaryIndex : verbatimStart;
  const keepFrom = applyMinVerbatimExchanges(
    messages,
    planned,
    input.minVerbatimExchanges ?? TOPIC_DEFAULTS.minVerbatimExchanges,
  );
  if (keepFrom === 0) return { case: 'none', reason: 'nothing-to-drop' };

  return {
    case: truncateOnly ? 'truncate-only' : 'summarize',
    keepFrom,
    boundarySeq: messages[keepFrom]?.seq ?? null,
    droppedMessages: keepFrom,
    summaryText: truncateOnly || boundary.summary.trim() === '' ? null : boundary.summary.trim(),
    boundaryIndex,
    verbatimStart,
    extendedForMinExchanges: keepFrom < planned,
  };
}
