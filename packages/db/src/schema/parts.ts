import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { messages } from './messages';
import { sessions } from './sessions';

/**
 * Message parts, one table for every part type (nullable columns per type) so that prune is one
 * set-based UPDATE and analysts need no JSON. `session_pk` and `seq` are copied from the message
 * so that context sums and prune selection are range scans without a join.
 */
export const parts = pgTable(
  'parts',
  {
    pk: bigint('pk', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    messagePk: bigint('message_pk', { mode: 'number' })
      .notNull()
      .references(() => messages.pk, { onDelete: 'cascade' }),
    sessionPk: bigint('session_pk', { mode: 'number' })
      .notNull()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    /** Position within the message. */
    idx: integer('idx').notNull(),
    type: text('type', { enum: ['text', 'reasoning', 'tool', 'file', 'compaction'] }).notNull(),
    text: text('text'),
    callId: text('call_id'),
    tool: text('tool'),
    toolStatus: text('tool_status', { enum: ['pending', 'running', 'completed', 'error'] }),
    toolInput: jsonb('tool_input'),
    toolOutput: text('tool_output'),
    toolError: text('tool_error'),
    /** Lazy deletion: set when pruned; the output stays stored. */
    compactedAt: timestamp('compacted_at', { withTimezone: true, mode: 'date' }),
    /** The prune job that cleared it, for history queries. */
    compactedBy: text('compacted_by'),
    mime: text('mime'),
    filename: text('filename'),
    url: text('url'),
    compactionAuto: boolean('compaction_auto'),
    /** Exact tokens of the part as sent, counted once at write time. */
    tokens: integer('tokens').notNull(),
    /** Exact tokens of the tool output alone: what pruning saves. */
    outputTokens: integer('output_tokens').notNull().default(0),
    metadata: jsonb('metadata')
      .notNull()
      .default(sql`'{}'::jsonb`),
  },
  (t) => [
    // Parts are read per message in order, and positions are unique.
    uniqueIndex('parts_message_idx_uq').on(t.messagePk, t.idx),
    // PATCH upserts tool parts by call id within a message.
    uniqueIndex('parts_message_call_uq')
      .on(t.messagePk, t.callId)
      .where(sql`${t.callId} is not null`),
    // Context token sums and prune selection scan a session's parts by seq.
    index('parts_session_seq_idx').on(t.sessionPk, t.seq),
  ],
);
