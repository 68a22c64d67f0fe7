import { bigint, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { parts } from './parts';

/**
 * Parts the context view shows clamped (core fit.ts): an excerpt in place of a tool output, a
 * text, a tool error or a call's arguments that alone would not fit the window. The part itself
 * keeps every byte (the raw history returns it); this row holds what the view shows instead: the
 * replaced content columns (null = unchanged) and the part's tokens as clamped. A compaction
 * writes it in the transaction that completes it, and sets `parts.clamped`, so readers of the
 * view look here only for the handful of parts that were clamped.
 */
export const partClamps = pgTable(
  'part_clamps',
  {
    partPk: bigint('part_pk', { mode: 'number' })
      .primaryKey()
      .references(() => parts.pk, { onDelete: 'cascade' }),
    sessionPk: bigint('session_pk', { mode: 'number' }).notNull(),
    /** The compaction that clamped it, for history queries. */
    clampedBy: text('clamped_by').notNull(),
    clampedAt: timestamp('clamped_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** Which content was replaced: `output`, `error`, `text` or `input`. */
    field: text('field', { enum: ['output', 'error', 'text', 'input'] }).notNull(),
    /** Exact tokens of the part as clamped, and of its output alone (`parts.tokens`, `output_tokens`). */
    tokens: integer('tokens').notNull(),
    outputTokens: integer('output_tokens').notNull(),
    text: text('text'),
    toolInput: jsonb('tool_input'),
    toolOutput: text('tool_output'),
    toolError: text('tool_error'),
    /**
     * The clamp this one replaced (an earlier compaction's, the whole row as `to_jsonb` wrote it,
     * its own `previous` included): reverting the compaction that wrote this one puts it back.
     * Null when the part was not clamped before.
     */
    previous: jsonb('previous'),
  },
  // A revert finds the clamps its compaction wrote.
  (t) => [index('part_clamps_clamped_by_idx').on(t.clampedBy)],
);
