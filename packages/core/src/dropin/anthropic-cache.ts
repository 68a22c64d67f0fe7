/**
 * Prompt-cache breakpoints for a rendered Anthropic request. Anthropic caches only up to blocks
 * marked `cache_control`, and the canonical form drops the client's marks (they move every turn),
 * so the served context carries none unless these are added: without them every drop-in turn
 * would pay the whole prompt at the full input price.
 */
import type { AnthropicContentBlock, AnthropicMessageParam } from './anthropic-render';

/** Anthropic allows four breakpoints per request; the client's system and tools may hold some. */
export const MAX_MESSAGE_CACHE_BREAKPOINTS = 4;

/** Blocks Anthropic refuses a breakpoint on (thinking is cached with the turn around it). */
const UNMARKABLE = new Set(['thinking', 'redacted_thinking']);

/**
 * `messages` with an ephemeral breakpoint on the last markable block of each of the last `count`
 * user messages (at most {@link MAX_MESSAGE_CACHE_BREAKPOINTS}): the newest one writes this
 * turn's prefix, the one before reads what the previous turn wrote. The input is not changed.
 */
export function withCacheBreakpoints(
  messages: readonly AnthropicMessageParam[],
  count: number,
): AnthropicMessageParam[] {
  const out = messages.map((message) => ({ ...message, content: [...message.content] }));
  let left = Math.min(Math.max(0, Math.floor(count)), MAX_MESSAGE_CACHE_BREAKPOINTS);
  for (let i = out.length - 1; i >= 0 && left > 0; i--) {
    const message = out[i]!;
    if (message.role !== 'user') continue;
    const at = lastMarkable(message.content);
    if (at < 0) continue;
    message.content[at] = {
      ...message.content[at]!,
      cache_control: { type: 'ephemeral' },
    } as AnthropicContentBlock;
    left -= 1;
  }
  return out;
}

function lastMarkable(content: readonly AnthropicContentBlock[]): number {
  for (let i = content.length - 1; i >= 0; i--) if (!UNMARKABLE.has(content[i]!.type)) return i;
  return -1;
}
