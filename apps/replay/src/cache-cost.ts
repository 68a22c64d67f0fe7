/**
 * What the replayed agent's own model calls cost with the provider's prompt cache, simulated from
 * the contexts Compactor served. At each model call the prompt is the served context; the part it
 * shares with the previous call's prompt (the longest common prefix of blocks: the same message
 * with the same rendering, in the same order) is read from the cache when the previous call was
 * within the cache's TTL; the rest is written to it (`explicit` caches: Anthropic bills the write)
 * or sent uncached (`automatic` caches: OpenAI, Gemini store prefixes for free, at the input
 * price; `none`: nothing is ever cached). A pruned output, a clamped part or a new summary changes
 * a block's rendering, so the prefix breaks there.
 *
 * Simplifications, said in docs/REPLAY.md: only the previous prompt is looked up (a provider may
 * also hold older prefixes); providers' minimum cacheable prefix (1,024 tokens) is ignored.
 */
import type { CacheModel } from '@compactor/core';

/** One block of a prompt: a message as rendered (`key` changes when its rendering does). */
export interface PromptBlock {
  key: string;
  tokens: number;
}

/** One of the agent's model calls. */
export interface ModelCall {
  prompt: readonly PromptBlock[];
  /** Output (and reasoning) tokens the call produced: the transcript's. */
  output: number;
  /** When it was sent (ms since the epoch), `null` when the transcript has no timestamps. */
  at: number | null;
}

export interface PromptCacheCost {
  calls: number;
  /** Whether the TTL was checked against the transcript's timestamps, or consecutive calls were taken as within it. */
  ttlFrom: 'timestamps' | 'consecutive';
  promptTokens: number;
  uncachedTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  outputTokens: number;
  /** USD, `null` when the model has no known price. */
  uncachedUsd: number | null;
  cacheReadUsd: number | null;
  cacheWriteUsd: number | null;
  outputUsd: number | null;
  totalUsd: number | null;
  /** The same prompts and outputs without any cache (every prompt token at the input price). */
  noCacheUsd: number | null;
}

/** Blocks two prompts share from their start. */
function sharedPrefix(previous: readonly PromptBlock[], next: readonly PromptBlock[]): number {
  let tokens = 0;
  for (let i = 0; i < Math.min(previous.length, next.length); i++) {
    if (previous[i]!.key !== next[i]!.key) break;
    tokens += next[i]!.tokens;
  }
  return tokens;
}

/** USD rounded to a millionth of a cent, as core's cache effects are. */
const usd = (tokens: number, perMillion: number) => Math.round(((tokens * perMillion) / 1e6) * 1e8) / 1e8;

/** How one call's prompt splits, in tokens. */
export interface CallCache {
  read: number;
  written: number;
  uncached: number;
}

/**
 * One call's prompt: read from the cache where it shares its start with the previous call's,
 * if that one was within the TTL (`timed`: by the calls' timestamps; otherwise it was), the
 * rest written or sent uncached by the cache's kind.
 */
export function callCache(
  previous: ModelCall | null,
  call: ModelCall,
  model: CacheModel,
  timed = previous?.at != null && call.at !== null,
): CallCache {
  const tokens = call.prompt.reduce((sum, block) => sum + block.tokens, 0);
  const age = timed && previous !== null ? call.at! - previous.at! : 0;
  const warm =
    previous !== null && model.cache.kind !== 'none' && age >= 0 && age < model.cache.ttlSeconds * 1000;
  const read = warm ? sharedPrefix(previous.prompt, call.prompt) : 0;
  return model.cache.kind === 'explicit'
    ? { read, written: tokens - read, uncached: 0 }
    : { read, written: 0, uncached: tokens - read };
}

export function simulatePromptCache(calls: readonly ModelCall[], model: CacheModel): PromptCacheCost {
  const timed = calls.length > 0 && calls.every((c) => c.at !== null);
  let uncached = 0;
  let read = 0;
  let written = 0;
  let output = 0;
  let previous: ModelCall | null = null;
  for (const call of calls) {
    const split = callCache(previous, call, model, timed);
    read += split.read;
    written += split.written;
    uncached += split.uncached;
    output += call.output;
    previous = call;
  }
  const promptTokens = read + written + uncached;
  const price = model.pricing;
  const costs = price && {
    uncachedUsd: usd(uncached, price.input),
    cacheReadUsd: usd(read, price.cacheRead),
    cacheWriteUsd: usd(written, price.cacheWrite),
    outputUsd: usd(output, price.output),
  };
  return {
    calls: calls.length,
    ttlFrom: timed ? 'timestamps' : 'consecutive',
    promptTokens,
    uncachedTokens: uncached,
    cacheReadTokens: read,
    cacheWriteTokens: written,
    outputTokens: output,
    uncachedUsd: costs?.uncachedUsd ?? null,
    cacheReadUsd: costs?.cacheReadUsd ?? null,
    cacheWriteUsd: costs?.cacheWriteUsd ?? null,
    outputUsd: costs?.outputUsd ?? null,
    totalUsd: costs
      ? Math.round((costs.uncachedUsd + costs.cacheReadUsd + costs.cacheWriteUsd + costs.outputUsd) * 1e8) /
        1e8
      : null,
    noCacheUsd: price ? Math.round((usd(promptTokens, price.input) + costs!.outputUsd) * 1e8) / 1e8 : null,
  };
}
