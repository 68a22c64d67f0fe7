/** What a change to the served context cost in the provider's prompt cache. */
import { z } from 'zod';

/** A compaction's or prune's prompt-cache effect (docs/DESIGN.md, "Prompt cache"). */
export const CacheEffectOut = z
  .object({
    invalidatedTokens: z
      .number()
      .int()
      .describe(
        "Prompt tokens the provider held in its cache (the last usage report's cacheRead + cacheWrite, while younger than the model's cache TTL) that the next prompt no longer reads from it: everything from the first position the change touched",
      ),
    rewriteCostUsd: z
      .number()
      .nullable()
      .describe(
        "What the next prompt costs more because of the change (USD); null when the model's prices are unknown",
      ),
    savingPerTurnUsd: z
      .number()
      .nullable()
      .describe(
        "What every later prompt costs less, the context being smaller (USD, at the cache-read price); null when the model's prices are unknown",
      ),
    breakEvenTurns: z
      .number()
      .int()
      .nullable()
      .describe(
        'Turns until the saving repays the rewrite: 0 when nothing was rewritten at a cost; null when never, or the prices are unknown',
      ),
  })
  .meta({ id: 'CacheEffect' });
/** A cache effect as a client receives it. */
export type CacheEffectView = z.output<typeof CacheEffectOut>;
