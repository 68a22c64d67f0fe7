/** The enumerations and the usage record that several resources share. */
import { z } from 'zod';
import { Count } from './primitives.js';

/** Who wrote a message; there is no `tool` role (results live on the assistant's tool parts). */
export const ROLES = ['user', 'assistant', 'system'] as const;

/** Why an assistant turn ended (`null` while it still streams). */
export const FINISH = ['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other'] as const;

/** A tool call's lifecycle: `pending → running → completed | error`. */
export const TOOL_STATUS = ['pending', 'running', 'completed', 'error'] as const;

/** Why a compaction was asked for: the append trigger, a client, or a provider's overflow error. */
export const COMPACTION_REASONS = ['auto', 'manual', 'overflow'] as const;

/**
 * A compaction's lifecycle: `pending → running → completed | failed | skipped`, and `completed →
 * reverted` when a client undoes it (only the latest completed one can be).
 */
export const COMPACTION_STATUSES = [
  'pending',
  'running',
  'completed',
  'failed',
  'skipped',
  'reverted',
] as const;

/** How a compaction shortens the history. */
export const STRATEGIES = ['summarize', 'truncate', 'topic'] as const;

/** The steps of a compaction, in the order they run. */
export const COMPACTION_STEPS = ['prune', 'summarize', 'finalize'] as const;

/**
 * Provider usage of an assistant turn (its last step), normalised; see core's `Usage`. The whole
 * prompt is `input + cacheRead + cacheWrite`, and `output` includes `reasoning`. It calibrates the
 * status estimate, which never goes below Compactor's own stored count: a report can only add,
 * up to a quarter of the usable input, what the provider saw besides (tool schemas, an unstored
 * system prompt). `reasoning` above `output` is refused here; a prompt or output over ten times
 * the session model's context window is refused by the append (400, nothing stored).
 */
export const UsageSchema = z
  .object({
    input: Count.describe(
      'Prompt tokens not counted in `cacheRead` or `cacheWrite`. OpenAI Chat Completions: ' +
        '`usage.prompt_tokens − usage.prompt_tokens_details.cached_tokens`; OpenAI Responses: ' +
        '`usage.input_tokens − usage.input_tokens_details.cached_tokens` (a `cache_write_tokens` count ' +
        'stays in it: OpenAI charges a write as input); Anthropic: `usage.input_tokens` (it already leaves ' +
        'the cache out). Sending OpenAI’s whole prompt here and its cached tokens in `cacheRead` counts the ' +
        'cached prefix twice',
    ),
    output: Count.describe(
      'Generated tokens, reasoning included. OpenAI Chat Completions: `usage.completion_tokens`; ' +
        'OpenAI Responses and Anthropic: `usage.output_tokens`',
    ),
    reasoning: Count.default(0).describe(
      'The part of `output` spent on reasoning (at most `output`; the context never sends it back). ' +
        'OpenAI Chat Completions: `usage.completion_tokens_details.reasoning_tokens`; OpenAI Responses: ' +
        '`usage.output_tokens_details.reasoning_tokens`; Anthropic: 0 (thinking is counted in ' +
        '`output_tokens` without a breakdown)',
    ),
    cacheRead: Count.default(0).describe(
      'Prompt tokens read from the prompt cache. OpenAI: `prompt_tokens_details.cached_tokens` (Chat ' +
        'Completions) or `input_tokens_details.cached_tokens` (Responses); Anthropic: ' +
        '`usage.cache_read_input_tokens`',
    ),
    cacheWrite: Count.default(0).describe(
      'Prompt tokens written to the prompt cache. Anthropic: `usage.cache_creation_input_tokens`; ' +
        'OpenAI: 0 (it charges a write as input, so its `cache_write_tokens` stay in `input`)',
    ),
  })
  .strict()
  .refine((usage) => usage.reasoning <= usage.output, {
    message: 'reasoning is part of output, so it cannot exceed it (see docs/API.md#usage)',
    path: ['reasoning'],
  })
  .meta({
    id: 'Usage',
    examples: [{ input: 1200, output: 340, reasoning: 0, cacheRead: 9000, cacheWrite: 0 }],
  });

/** Usage as a client sends it (`reasoning`, `cacheRead`, `cacheWrite` default to 0). */
export type UsageInput = z.input<typeof UsageSchema>;
