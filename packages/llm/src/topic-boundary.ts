import type { TopicBoundary } from '@compactor/core';
import { NO_TOPIC_BOUNDARY, parseTopicBoundary } from '@compactor/core';
import type { ChatCompleter } from './client';
import type { CountTokensAsync } from './count-tokens';
import { assertPromptFits } from './summarize';
import type { LlmUsage } from './usage';

/** One topic-detection call (docs/PRESETS.md, `topic`); size `maxOutputTokens` for the JSON answer, summary included. */
export interface DetectTopicBoundaryRequest {
  /** Built by core's `buildTopicDetectionRequest` (its `window` stays with the caller). */
  prompt: { system: string; user: string };
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** The detector model's window when known: a prompt that cannot fit is refused unsent. */
  contextWindow?: number | null;
}

/** The parsed detector answer, the raw text and the call's cost; an unusable answer is not an error. */
export interface TopicBoundaryResult {
  /** Parsed leniently by core; the safe default (no boundary, confidence 0) when unparseable. */
  boundary: TopicBoundary;
  /** The raw answer, for the compaction's step record. */
  text: string;
  /**
   * The answer stopped at `maxOutputTokens` (`finish_reason: length`). A cut JSON parses to no
   * boundary and no summary, so core's plan has the summarizer write the summary; raise
   * `maxOutputTokens` (the reference's summary budget plus the JSON around it) if this is frequent.
   */
  truncated: boolean;
  usage: LlmUsage;
  costUsd: number | null;
  model: string;
}

/**
 * Asks where the current topic started (docs/PRESETS.md, `topic`). An unusable answer (empty, prose, a tool call,
 * JSON cut off at the output limit) is not an error: it parses to "no boundary" with no summary,
 * and core's topic plan falls through to summarising with the normal summarizer.
 * A failed call is thrown classified, so the queue can retry it like any other LLM call.
 */
export async function detectTopicBoundary(
  deps: { completer: ChatCompleter; countTokens: CountTokensAsync },
  request: DetectTopicBoundaryRequest,
): Promise<TopicBoundaryResult> {
  await assertPromptFits(request.prompt, request, deps.countTokens);
  const answer = await deps.completer.complete({
    model: request.model,
    system: request.prompt.system,
    user: request.prompt.user,
    maxOutputTokens: request.maxOutputTokens,
    signal: request.signal,
    timeoutMs: request.timeoutMs,
  });
  const boundary = answer.toolCallCount > 0 ? { ...NO_TOPIC_BOUNDARY } : parseTopicBoundary(answer.text);
  return {
    boundary,
    text: answer.text,
    truncated: answer.finishReason === 'length',
    usage: answer.usage,
    costUsd: answer.costUsd,
    model: answer.model,
  };
}
