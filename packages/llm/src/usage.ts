import type { Usage } from '@compactor/core';

/**
 * Token usage as OpenAI-compatible providers report it: `promptTokens` includes the cached part,
 * `completionTokens` includes reasoning.
 */
export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  cachedPromptTokens: number;
  reasoningTokens: number;
}

/** No tokens: the start of a sum with {@link addUsage}. Frozen. */
export const ZERO_USAGE: LlmUsage = Object.freeze({
  promptTokens: 0,
  completionTokens: 0,
  cachedPromptTokens: 0,
  reasoningTokens: 0,
});

/** Field-by-field sum of two usage reports (calls of one compaction: retries, chunks, halves). */
export function addUsage(a: LlmUsage, b: LlmUsage): LlmUsage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    cachedPromptTokens: a.cachedPromptTokens + b.cachedPromptTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
  };
}

/** Sum of costs where `null` (unknown price) is contagious: a partial sum would under-report. */
export function addCost(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : Math.round((a + b) * 1e8) / 1e8;
}

/** Shape of the SDK's `CompletionUsage`, loosely: proxies omit the details objects. */
interface WireUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/** Normalises the SDK's `usage`; missing fields (proxies omit the details objects) count as 0. */
export function usageFromWire(usage: WireUsage | null | undefined): LlmUsage {
  return {
    promptTokens: usage?.prompt_tokens ?? 0,
    completionTokens: usage?.completion_tokens ?? 0,
    cachedPromptTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    reasoningTokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}

/** The store's normalised usage (Anthropic's convention: `input` excludes cache reads). */
export function toMessageUsage(usage: LlmUsage): Usage {
  return {
    input: usage.promptTokens - usage.cachedPromptTokens,
    output: usage.completionTokens,
    reasoning: usage.reasoningTokens,
    cacheRead: usage.cachedPromptTokens,
    cacheWrite: 0,
  };
}
