import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { sessions } from './sessions';

/** Every value of `prepared_summaries.status`. */
export const PREPARED_SUMMARY_STATUSES = ['pending', 'ready', 'failed', 'skipped'] as const;

/**
 * A summary written ahead of the trigger (policy `prepare`), one per session: requested when the
 * session crosses its soft threshold (`pending`, with its outbox entry), written by a worker
 * without changing the context (`ready`), then finalized by the next auto compaction when it
 * still covers a prefix of the view (core `preparedDraftUsable`). A newer crossing replaces it.
 */
export const preparedSummaries = pgTable(
  'prepared_summaries',
  {
    sessionPk: bigint('session_pk', { mode: 'number' })
      .primaryKey()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    /** The request's id (its job id): the worker's writes are fenced with it, so a replaced request writes nothing. */
    id: text('id').notNull(),
    status: text('status', { enum: PREPARED_SUMMARY_STATUSES }).notNull().default('pending'),
    /** The session's latest completed compaction when requested: the draft serves only while it still is. */
    baseCompactionId: text('base_compaction_id'),
    /** The session's policy input and model when written (workflow `preparedSettingsKey`). */
    settingsKey: text('settings_key'),
    /** The last seq the draft read. */
    coversThroughSeq: integer('covers_through_seq'),
    /** The draft's boundary: the first seq it keeps. */
    cutSeq: integer('cut_seq'),
    /** The lowest seq a PATCH changed since the worker began reading the view (db `markCoveredChange`). */
    changedSeq: integer('changed_seq'),
    /** The summarize step's outcome (the summary, its file ops and counts): what finalize writes. */
    outcome: jsonb('outcome'),
    /** What the summarizer cost; a compaction that uses the draft is charged it. */
    model: text('model'),
    usageInput: integer('usage_input'),
    usageOutput: integer('usage_output'),
    costUsd: numeric('cost_usd', { precision: 12, scale: 6, mode: 'number' }),
    /** Why the draft was not written (`failed`, `skipped`): a code, never message text. */
    errorCode: text('error_code'),
    requestedAt: timestamp('requested_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    preparedAt: timestamp('prepared_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    // The reconciler looks for pending drafts whose job is gone, oldest first, each pass resuming
    // after the last it checked (session_pk breaks ties): it reads only pending rows (at most
    // one per session), never the ready or given-up drafts that accumulate.
    index('prepared_summaries_pending_idx')
      .on(t.requestedAt, t.sessionPk)
      .where(sql`${t.status} = 'pending'`),
  ],
);
