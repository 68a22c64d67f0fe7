import type { ModelInfo, Policy } from '@compactor/core';
import { lookupKnownModel } from '@compactor/core';
import type { SummarizerSettings } from './chunked-summary';

export interface ResolveSummarizerInput {
  /** The session policy's `summarizer` section. */
  policy: Policy['summarizer'];
  /** The session's own model: the summarizer when the policy names none. */
  session: ModelInfo;
  /** A deployment-wide summarizer model (e.g. a cheaper one from the worker's env), below the policy's. */
  defaultModel?: string | null;
}

/**
 * Which model summarises and within which window. Model: the policy's, else the deployment's
 * default, else the session's. Window: the policy's; else the session's when it is the same
 * model (its input limit honoured); else what core's model catalog knows; else unknown (`null`),
 * in which case the first overflow error sets the budget.
 */
export function resolveSummarizerSettings(input: ResolveSummarizerInput): SummarizerSettings {
  const { policy, session } = input;
  const model = policy.model ?? input.defaultModel ?? session.id;
  return {
    model,
    maxOutputTokens: policy.maxOutputTokens,
    timeoutMs: policy.timeoutMs,
    contextWindow: policy.contextWindow ?? inferredWindow(model, session, policy.maxOutputTokens),
    toolResultMaxChars: policy.toolResultMaxChars,
    toolArgsMaxChars: policy.toolArgsMaxChars,
  };
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
