/**
 * Provider usage recorded in a transcript measured the *uncompacted* prompt. Before Compactor has
 * removed anything that is the truth and is sent as recorded. Once a compaction has completed (or
 * a prune cleared outputs), the recorded figure would claim a context that no longer exists, so
 * the replay either:
 *
 * - `rescale` (default): reports the prompt the model would now get: the context Compactor serves
 *   (the API's estimate of the next prompt, `status.tokens`) plus the transcript's *overhead*, what
 *   its prompts held beyond its messages (system prompt, tool definitions: the first recorded prompt
 *   minus the messages before it). The overhead is added only to a `stored` estimate (the
 *   stored counts of the messages alone): a `hybrid` one starts from a report that already
 *   includes it. Cache fields become 0; `output` and
 *   `reasoning` are kept as recorded.
 * - `drop`: sends no usage, so the API estimates from its stored token counts alone.
 *
 * A recorded report larger than any of the replayed window's models could make (a prompt of a
 * 200k-token model replayed at 4k) is treated as the compacted case from the start.
 */
import type { SessionStatus } from '@compactor/contract';
import { implausibleUsage, promptTokens, usagePeaks, type Usage } from '@compactor/core';
import type { UsageMode } from './report/model';
import type { CallCache } from './cache-cost';

export interface UsageState {
  contextReduced: boolean;
  /** The replayed session's context window: a recorded report no model of it could make is rescaled. */
  window: number;
  /** The API's estimate of the next prompt, and whether a usage report calibrates it. */
  servedTokens: number;
  estimate: SessionStatus['estimate'];
  /** What the transcript's prompts held beyond its messages; see {@link measureOverhead}. */
  overhead: number;
  mode: UsageMode;
}

export function usageToSend(recorded: Usage | null | undefined, state: UsageState): Usage | null {
  if (!recorded) return null;
  // Recorded on a larger model, a prompt can be more than the API takes from one of this window
  // (USAGE_REPORT_MAX_WINDOWS): such a prompt was never this model's, so it is rescaled too.
  if (!state.contextReduced && possibleFor(recorded, state.window)) return recorded;
  if (state.mode === 'drop') return null;
  const input = state.servedTokens + (state.estimate === 'stored' ? state.overhead : 0);
  const rescaled = {
    input,
    cacheRead: 0,
    cacheWrite: 0,
    output: recorded.output,
    reasoning: recorded.reasoning,
  };
  // An overhead measured on a transcript that starts mid-conversation can itself be more than
  // any model of this window takes: then no report at all, as in `drop`.
  return possibleFor(rescaled, state.window) ? rescaled : null;
}

function possibleFor(usage: Usage, window: number): boolean {
  return implausibleUsage(usagePeaks([usage]), window) === null;
}

/**
 * The overhead a recorded prompt shows over a `stored` estimate of the messages it was sent with
 * (`null` when the estimate is `hybrid`, i.e. cannot tell messages from overhead).
 */
export function measureOverhead(
  recorded: Usage | null | undefined,
  servedTokens: number,
  estimate: SessionStatus['estimate'],
): number | null {
  if (!recorded || estimate !== 'stored') return null;
  return Math.max(0, promptTokens(recorded) - servedTokens);
}

/**
 * The usage a provider would have reported for a prompt the replay priced through its cache
 * (cache-cost.ts): the same prompt tokens, split into cache reads (at most the prompt), cache
 * writes (a cache that bills writes wrote the rest) and uncached input. Cache-aware pruning
 * weighs the cache a prune breaks by these fields, so a transcript whose usage recorded none
 * (or a rescaled one, whose cache fields are 0) still shows the server a warm cache.
 */
export function withCacheSplit(usage: Usage, split: CallCache): Usage {
  const prompt = promptTokens(usage);
  const cacheRead = Math.min(split.read, prompt);
  const cacheWrite = split.written > 0 ? prompt - cacheRead : 0;
  return { ...usage, input: prompt - cacheRead - cacheWrite, cacheRead, cacheWrite };
}
