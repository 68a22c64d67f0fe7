/**
 * A provider's `usage` as Compactor's: `{ input, output, reasoning, cacheRead, cacheWrite }`, where
 * `input` is the prompt tokens neither read from nor written to the prompt cache (so the whole
 * prompt is `input + cacheRead + cacheWrite`) and `output` includes `reasoning`.
 *
 * The providers disagree on what "input" means: OpenAI's `prompt_tokens` / `input_tokens` is the
 * whole prompt, cached tokens included; Anthropic's `input_tokens` already leaves the cache out.
 * Sending OpenAI's `prompt_tokens` as `input` AND its `cached_tokens` as `cacheRead` counts the
 * cached prefix twice, and Compactor then compacts a conversation about half the size it thinks.
 * These helpers do the subtraction once, for both.
 *
 * The inputs are typed structurally (every field optional and nullable), so neither SDK is a
 * dependency and a proxy's partial or odd answer still maps: a missing, null, negative or
 * non-finite count is 0, a fractional one is rounded, and nothing exceeds what the API accepts.
 */
import type { UsageInput } from '@compactor/contract';

/** Every field of Compactor's usage, filled in (what the helpers return). */
export type CompactorUsage = Required<UsageInput>;

/** A count as a provider may send it. */
type Count = number | null | undefined;

/**
 * OpenAI Chat Completions' `usage` (`CompletionUsage` of the `openai` package), or the Responses
 * API's (`ResponseUsage`): the fields the mapping reads.
 */
export interface OpenAIUsageLike {
  /** Chat Completions: the whole prompt, cached tokens included. */
  prompt_tokens?: Count;
  completion_tokens?: Count;
  prompt_tokens_details?: { cached_tokens?: Count } | null;
  completion_tokens_details?: { reasoning_tokens?: Count } | null;
  /** Responses API: the whole prompt, cached tokens included. */
  input_tokens?: Count;
  output_tokens?: Count;
  input_tokens_details?: { cached_tokens?: Count } | null;
  output_tokens_details?: { reasoning_tokens?: Count } | null;
}

/** Anthropic Messages' `usage` (`Usage` of `@anthropic-ai/sdk`): the fields the mapping reads. */
export interface AnthropicUsageLike {
  /** The prompt tokens after the last cache breakpoint: cache reads and writes are NOT in it. */
  input_tokens?: Count;
  output_tokens?: Count;
  cache_read_input_tokens?: Count;
  cache_creation_input_tokens?: Count;
}

/** The API's counts are Postgres `integer`s. */
const MAX_COUNT = 2_147_483_647;

/** A count the API accepts: garbage (null, NaN, negative, a string) is 0, fractions round. */
function count(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return 0;
  return Math.min(Math.round(value), MAX_COUNT);
}

/**
 * Compactor's usage from OpenAI's: Chat Completions (`prompt_tokens`, `completion_tokens`, …) or
 * the Responses API (`input_tokens`, `output_tokens`, …), told apart by their fields.
 * `input = prompt − cached_tokens`, `cacheRead = cached_tokens`, `reasoning = reasoning_tokens`,
 * `cacheWrite = 0`: OpenAI caches on its own and charges a write as input, so the tokens its newer
 * `cache_write_tokens` reports stay in `input`, as the contract's `Usage` documents (the overflow
 * trigger leaves cache writes out, and these are prompt tokens it must count).
 */
export function usageFromOpenAI(usage: OpenAIUsageLike | null | undefined): CompactorUsage {
  const chat = usage?.prompt_tokens != null || usage?.completion_tokens != null;
  const prompt = count(chat ? usage?.prompt_tokens : usage?.input_tokens);
  const promptDetails = chat ? usage?.prompt_tokens_details : usage?.input_tokens_details;
  const outputDetails = chat ? usage?.completion_tokens_details : usage?.output_tokens_details;
  // Cached tokens are part of the prompt: never more of them than the prompt holds.
  const cacheRead = Math.min(count(promptDetails?.cached_tokens), prompt);
  const output = count(chat ? usage?.completion_tokens : usage?.output_tokens);
  return {
    input: prompt - cacheRead,
    output,
    // The API refuses reasoning above output (it is part of output).
    reasoning: Math.min(count(outputDetails?.reasoning_tokens), output),
    cacheRead,
    cacheWrite: 0,
  };
}

/**
 * Compactor's usage from Anthropic's: `input_tokens` is already the uncached part, so it maps as
 * it is, `cache_read_input_tokens` → `cacheRead`, `cache_creation_input_tokens` → `cacheWrite`.
 * Anthropic counts extended thinking in `output_tokens` without a breakdown: `reasoning` is 0.
 */
export function usageFromAnthropic(usage: AnthropicUsageLike | null | undefined): CompactorUsage {
  return {
    input: count(usage?.input_tokens),
    output: count(usage?.output_tokens),
    reasoning: 0,
    cacheRead: count(usage?.cache_read_input_tokens),
    cacheWrite: count(usage?.cache_creation_input_tokens),
  };
}
