import type { SummaryPrompt } from '@compactor/core';
import { validateSummaryOutput } from '@compactor/core';
import type { ChatCompleter } from './client';
import { CHAT_FRAMING_TOKENS } from './chunking';
import type { CountTokens } from './count-tokens';
import { InvalidSummaryError, LlmOverflowError } from './errors';
import type { LlmUsage } from './usage';
import { addCost, addUsage, ZERO_USAGE } from './usage';

export interface SummarizeRequest {
  /** Built by core's `buildSummaryPrompt`. */
  prompt: SummaryPrompt;
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /**
   * The summarizer's window when known: a prompt that cannot fit is refused here, before it is
   * sent (it would only come back as an overflow error after a round trip, or worse, be
   * silently truncated by the server).
   */
  contextWindow?: number | null;
}

export interface SummaryResult {
  /** The validated summary (unwrapped from fences or `<summary>` tags). */
  text: string;
  /** Summed over every call made, invalid attempts included: they were paid for. */
  usage: LlmUsage;
  costUsd: number | null;
  /** The model that answered the last call. */
  model: string;
  /** Requests sent. */
  calls: number;
  /** Chunks folded into the summary (1 when the input fit in one request). */
  chunks: number;
  /** A call stopped at `maxOutputTokens` (`finish_reason: length`): the summary may be cut short. */
  truncated: boolean;
}

export interface SummarizeDeps {
  completer: ChatCompleter;
  countTokens: CountTokens;
  /** Extra attempts after an invalid output (empty, echo, tool call). Default 1. */
  invalidOutputRetries?: number;
}

/** Tokens of a prompt as a provider would see it: both messages plus the chat framing. */
export async function countPromptTokens(
  prompt: SummaryPrompt,
  countTokens: CountTokens,
  signal?: AbortSignal,
): Promise<number> {
  const options = { signal };
  const [system, user] = await Promise.all([
    countTokens(prompt.system, options),
    countTokens(prompt.user, options),
  ]);
  return system + user + CHAT_FRAMING_TOKENS;
}

/**
 * Refuses, before sending, a prompt that cannot fit `contextWindow` with `maxOutputTokens` of
 * output (what OpenAI and vLLM check). No-op when the window is unknown.
 */
export async function assertPromptFits(
  prompt: SummaryPrompt,
  limits: { model: string; maxOutputTokens: number; contextWindow?: number | null | undefined },
  countTokens: CountTokens,
): Promise<void> {
  if (limits.contextWindow == null) return;
  const promptTokens = await countPromptTokens(prompt, countTokens);
  if (promptTokens + limits.maxOutputTokens > limits.contextWindow) {
    throw new LlmOverflowError(
      `prompt of ${promptTokens} tokens + ${limits.maxOutputTokens} output tokens exceeds ` +
        `the ${limits.contextWindow}-token window of ${limits.model}; not sent`,
      null,
    );
  }
}

/**
 * One summary from one prompt: call, validate, retry on invalid output, then give up with
 * `InvalidSummaryError` so the workflow can fall back to truncation. Provider errors are not
 * retried here: they are thrown classified, and the job queue decides.
 */
export async function summarizePrompt(
  deps: SummarizeDeps,
  request: SummarizeRequest,
): Promise<SummaryResult> {
  await assertPromptFits(request.prompt, request, deps.countTokens);
  const attempts = 1 + Math.max(0, deps.invalidOutputRetries ?? 1);
  let usage = ZERO_USAGE;
  let costUsd: number | null = 0;
  let lastReason = 'no attempt made';
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    const answer = await deps.completer.complete({
      model: request.model,
      system: request.prompt.system,
      user: request.prompt.user,
      maxOutputTokens: request.maxOutputTokens,
      signal: request.signal,
      timeoutMs: request.timeoutMs,
    });
    usage = addUsage(usage, answer.usage);
    costUsd = addCost(costUsd, answer.costUsd);
    // The request offers no tools, so a tool call means the model mistook its role.
    const verdict =
      answer.toolCallCount > 0 || answer.finishReason === 'tool_calls'
        ? ({ ok: false, reason: 'calls-tool' } as const)
        : validateSummaryOutput(answer.text);
    if (verdict.ok) {
      return {
        text: verdict.text,
        usage,
        costUsd,
        model: answer.model,
        calls: attempt,
        chunks: 1,
        truncated: answer.finishReason === 'length',
      };
    }
    lastReason = verdict.reason;
  }
  throw new InvalidSummaryError(lastReason, attempts, { usage, costUsd });
}
