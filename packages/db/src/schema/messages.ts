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
import { sessions } from './sessions';

/** A message of a session, in `seq` order. Usage is split into columns so analysts can sum it. */
export const messages = pgTable(
  'messages',
  {
    pk: bigint('pk', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    sessionPk: bigint('session_pk', { mode: 'number' })
      .notNull()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    id: text('id').notNull(),
    role: text('role', { enum: ['user', 'assistant', 'system'] }).notNull(),
    finish: text('finish'),
    error: jsonb('error'),
    usageInput: integer('usage_input'),
    usageOutput: integer('usage_output'),
    usageReasoning: integer('usage_reasoning'),
    usageCacheRead: integer('usage_cache_read'),
    usageCacheWrite: integer('usage_cache_write'),
    metadata: jsonb('metadata')
      .notNull()
      .default(sql`'{}'::jsonb`),
    /** Written by a compaction (its request marker or its summary). */
    summary: boolean('summary').notNull().default(false),
    compactionId: text('compaction_id'),
    /** Hash of the message as first posted: a re-post must match it (idempotency). */
    contentHash: text('content_hash').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /**
     * When the retention purge cleared this message's content (its parts' text): set only on
     * messages behind the latest completed compaction's boundary, never on one the view serves.
     */
    purgedAt: timestamp('purged_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    // Every history read is a range scan by seq within a session.
    uniqueIndex('messages_session_seq_uq').on(t.sessionPk, t.seq),
    // Idempotent appends look up client ids.
    uniqueIndex('messages_session_id_uq').on(t.sessionPk, t.id),
    // Hybrid estimate: newest assistant turn with reported usage, scanned backwards by seq.
    index('messages_session_usage_idx')
      .on(t.sessionPk, t.seq)
      .where(sql`${t.usageInput} is not null`),
    // The context view reads the session's pinned system messages from before the boundary and
    // the summaries inside the kept range without scanning the history: both are a handful.
    index('messages_session_pinned_idx')
      .on(t.sessionPk, t.seq)
      .where(sql`${t.role} = 'system' and not ${t.summary}`),
    index('messages_session_summary_idx')
      .on(t.sessionPk, t.seq)
      .where(sql`${t.summary}`),
    // A revert's check for purged history reads purged messages only (migration 0027).
    index('messages_session_purged_idx')
      .on(t.sessionPk, t.seq)
      .where(sql`${t.purgedAt} is not null and not ${t.summary}`),
  ],
);
