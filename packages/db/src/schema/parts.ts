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
 * so that context sums and prune selection are range scans without a join. Whether a tool output
 * is pruned lives in `part_prunes`, a narrow table (see there why).
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
    /** A text or reasoning part's text; a file part's tool call id when it is part of that call's result. */
    text: text('text'),
    callId: text('call_id'),
    tool: text('tool'),
    toolStatus: text('tool_status', { enum: ['pending', 'running', 'completed', 'error'] }),
    toolInput: jsonb('tool_input'),
    toolOutput: text('tool_output'),
    toolError: text('tool_error'),
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
    /**
     * When the retention purge cleared this part's content (a pruned output's text, or every
     * content column of a superseded message's part); token counts and labels stay.
     */
    purgedAt: timestamp('purged_at', { withTimezone: true, mode: 'date' }),
    /** The context view shows this part clamped: its excerpt is in `part_clamps`. */
    clamped: boolean('clamped').notNull().default(false),
    /**
     * The part has left the model's view (behind a boundary, or its output pruned), so recall
     * searches it: only these parts are in `parts_recall_search_idx`. Set by the worker (the prune
     * statement, the compaction's covered windows), never on append (migration 0016 says why).
     */
    recallable: boolean('recallable').notNull().default(false),
    // Not declared here, as `recall_arguments` (migration 0023) is not: `recall_words` (migration
    // 0030), the tsvector recall finds a flagged part by, written with its flag (db
    // recallable.ts). Every reader of whole part rows (db `partColumns`, `selectList`) names the
    // declared columns, and none of them needs the words.
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
    // Appends look up the session's unfinished calls by call id (a deferred result is refused):
    // only pending and running calls are indexed, a handful per session.
    index('parts_session_unfinished_call_idx')
      .on(t.sessionPk, t.callId)
      .where(sql`${t.toolStatus} in ('pending', 'running')`),
    // A session's tool calls by id, newest first (ids are unique per message, not per session):
    // recall by call id, and the drop-in's tool results (one entry each, however often an id recurs).
    index('parts_session_call_idx')
      .on(t.sessionPk, t.callId, t.seq)
      .where(sql`${t.type} = 'tool'`),
    // A prune's walk over the completed outputs, index-only: migration 0027 adds INCLUDE (tool,
    // output_tokens, tokens, clamped, call_id, pk), which drizzle cannot spell.
    index('parts_session_output_idx')
      .on(t.sessionPk, t.seq, t.idx)
      .where(sql`${t.type} = 'tool' and ${t.toolStatus} = 'completed'`),
    // A revert's check for purged outputs reads purged ones only (migration 0027).
    index('parts_session_purged_output_idx')
      .on(t.sessionPk, t.seq)
      .where(sql`${t.purgedAt} is not null and ${t.type} = 'tool'`),
    // Whether any part refers to a media object: the hash inside a stored reference (migration
    // 0028; the orphan collector, db media/orphans.ts).
    index('parts_media_sha_idx')
      .on(sql`substr(${t.url}, 24, 64)`)
      .where(sql`${t.type} = 'file' and ${t.url} like 'compactor-media:%'`),
    // Recall by words: GIN over (session, the part's stored words `recall_words`), btree_gin for
    // the session, of the parts out of view only (migrations 0016 and 0030 say why).
    index('parts_recall_search_idx')
      .using('gin', t.sessionPk, sql`recall_words`)
      .where(sql`${t.recallable} and ${t.type} in ('text', 'reasoning', 'tool')`),
  ],
);
