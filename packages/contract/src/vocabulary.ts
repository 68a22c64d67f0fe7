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

/** Provider usage of an assistant turn (its last step), normalised; see core's `Usage`. */
export const UsageSchema = z
  .object({
    input: Count.describe('Prompt tokens not read from or written to cache'),
    output: Count,
    reasoning: Count.default(0),
    cacheRead: Count.default(0),
    cacheWrite: Count.default(0),
  })
  .strict()
  .meta({
    id: 'Usage',
    examples: [{ input: 1200, output: 340, reasoning: 0, cacheRead: 9000, cacheWrite: 0 }],
  });

/** Usage as a client sends it (`reasoning`, `cacheRead`, `cacheWrite` default to 0). */
export type UsageInput = z.input<typeof UsageSchema>;
