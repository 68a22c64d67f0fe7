import type { ModelInfo, Policy, SummaryPromptStyle } from '@compactor/core';
import { buildSummaryPrompt, estimateTokens, lookupKnownModel } from '@compactor/core';
import { CHAT_FRAMING_TOKENS, MIN_CHUNK_TOKENS, promptTokenBudget } from './chunking';
import { LlmFatalError } from './errors';

/** The policy's `summarizer` section, resolved for one call (see `resolveSummarizerSettings`). */
export interface SummarizerSettings {
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
  /** The summarizer model's window; `null` when unknown (then overflow errors teach us). */
  contextWindow: number | null;
  toolResultMaxChars: number;
  toolArgsMaxChars: number;
  /** The policy's `summarizer.prompt` (core `SummaryPromptStyle`); absent: `structured`. */
  prompt?: SummaryPromptStyle;
}

/** For {@link resolveSummarizerSettings}: the policy's model, else `defaultModel`, else the session's. */
export interface ResolveSummarizerInput {
  /** The session policy's `summarizer` section. */
  policy: Policy['summarizer'];
  /** The session's own model: the summarizer when the policy names none. */
  session: ModelInfo;
  /** A deployment-wide summarizer model (e.g. a cheaper one from the worker's env), below the policy's. */
  defaultModel?: string | null;
}

/** At most this share of a known window goes to the summary: the rest is for the prompt. */
export const MAX_OUTPUT_WINDOW_SHARE = 0.25;

/**
 * Which model summarises, within which window, with which output budget.
 *
 * Model: the policy's, else the deployment's default, else the session's.
 * Output budget: `min(policy.maxOutputTokens, the model's max output, floor(window / 4))`. The
 * model's max output is the session's when the summarizer is the session's model, else core's
 * catalog (`gpt-4-turbo`, `gpt-3.5-turbo`, `llama-3.1-*`: 4,096); providers reject a larger
 * `max_tokens` outright, which would fail every summary. The window share keeps room for the
 * prompt on small windows.
 * Window: the policy's; else the session's when it is the same model (its input limit
 * honoured); else what the catalog knows; else unknown (`null`), and the first overflow error
 * sets the budget.
 *
 * Throws {@link LlmFatalError} when a known window cannot hold the summary instructions, a
 * summary and a minimal transcript chunk: no request could succeed, and an overflow error would
 * send the workflow into emergency compactions that cannot help.
 */
export function resolveSummarizerSettings(input: ResolveSummarizerInput): SummarizerSettings {
  const { policy, session } = input;
  const model = policy.model ?? input.defaultModel ?? session.id;
  const modelOutput = modelMaxOutput(model, session);
  const requested =
    modelOutput === null ? policy.maxOutputTokens : Math.min(policy.maxOutputTokens, modelOutput);
  const window = policy.contextWindow ?? inferredWindow(model, session, requested);
  const maxOutputTokens =
    window === null ? requested : Math.min(requested, Math.floor(window * MAX_OUTPUT_WINDOW_SHARE));
  if (window !== null) assertWindowUsable(model, window, maxOutputTokens);
  return {
    model,
    maxOutputTokens,
    timeoutMs: policy.timeoutMs,
    contextWindow: window,
    toolResultMaxChars: policy.toolResultMaxChars,
    toolArgsMaxChars: policy.toolArgsMaxChars,
    prompt: policy.prompt,
  };
}

/** The summarizer model's output limit: the session's for the same model, else the catalog's. */
function modelMaxOutput(model: string, session: ModelInfo): number | null {
  if (model === session.id && session.maxOutputTokens > 0) return session.maxOutputTokens;
  return lookupKnownModel(model)?.maxOutputTokens ?? null;
}

function inferredWindow(model: string, session: ModelInfo, maxOutputTokens: number): number | null {
  if (model === session.id) {
    if (session.contextWindow <= 0) return null; // 0 = unlimited
    // A separate input limit caps the prompt; the window caps prompt + output.
    return session.inputLimit === null
      ? session.contextWindow
      : Math.min(session.contextWindow, session.inputLimit + maxOutputTokens);
  }
  const known = lookupKnownModel(model);
  if (!known) return null;
  return known.inputLimit === undefined
    ? known.contextWindow
    : Math.min(known.contextWindow, known.inputLimit + maxOutputTokens);
}

/** Estimated tokens of the smallest summary prompt: the instructions with an update section. */
const FIXED_PROMPT_TOKENS = (() => {
  const prompt = buildSummaryPrompt({ messages: [], previousSummary: 'x' });
  return estimateTokens(prompt.system) + estimateTokens(prompt.user) + CHAT_FRAMING_TOKENS;
})();

/**
 * The smallest window a summary can be written in with `maxOutputTokens`: the instructions, a
 * running summary as large as the output, a minimal chunk of transcript, the output and the
 * safety share (see `promptTokenBudget`).
 */
function assertWindowUsable(model: string, window: number, maxOutputTokens: number): void {
  const budget = promptTokenBudget({ contextWindow: window, maxOutputTokens });
  const needed = FIXED_PROMPT_TOKENS + maxOutputTokens + MIN_CHUNK_TOKENS;
  if (budget < needed) {
    throw new LlmFatalError(
      `the summarizer window of ${window} tokens (${model}) is too small for a summary: a prompt may take ` +
        `${Math.max(0, budget)} tokens there, one needs about ${needed} (instructions, a ${maxOutputTokens}-token ` +
        `running summary and some transcript); configure a summarizer model with a larger window`,
    );
  }
}
