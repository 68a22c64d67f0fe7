import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { COMPACTION_STATUSES } from '@compactor/contract';
import { sessions } from './sessions';

/** Every value of `compactions.status` (the contract's list; core's `CompactionStatus`). */
export { COMPACTION_STATUSES };
/** Statuses of an unfinished compaction; a partial unique index allows one such row per session. */
export const ACTIVE_COMPACTION_STATUSES = ['pending', 'running'] as const;

/**
 * One compaction through `pending → running → completed | failed | skipped`, and `completed →
 * reverted` when undone: the analysts' history.
 */
export const compactions = pgTable(
  'compactions',
  {
    id: text('id').primaryKey(),
    sessionPk: bigint('session_pk', { mode: 'number' })
      .notNull()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    /**
     * The session's tenant, copied when the row is inserted: the per-tenant cap on active
     * compactions counts them by tenant without reading every session the tenant has.
     */
    tenantId: text('tenant_id').notNull(),
    reason: text('reason', { enum: ['auto', 'manual', 'overflow'] }).notNull(),
    strategy: text('strategy', { enum: ['summarize', 'truncate', 'topic'] }).notNull(),
    status: text('status', { enum: COMPACTION_STATUSES }).notNull().default('pending'),
    step: text('step', { enum: ['prune', 'summarize', 'finalize'] }),
    attempts: integer('attempts').notNull().default(0),
    /** Fencing token: bumped by each attempt; a late worker with an older fence cannot write. */
    fence: integer('fence').notNull().default(0),
    keepRecentTokens: integer('keep_recent_tokens'),
    force: boolean('force').notNull().default(false),
    instructions: text('instructions'),
    idempotencyKey: text('idempotency_key'),
    /** Last seq the compaction covers, fixed when it starts: later appends land after the boundary. */
    coversThroughSeq: integer('covers_through_seq'),
    boundarySeq: integer('boundary_seq'),
    summaryMessageIds: text('summary_message_ids')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    tokensBefore: integer('tokens_before'),
    tokensAfter: integer('tokens_after'),
    messagesBefore: integer('messages_before'),
    messagesAfter: integer('messages_after'),
    prunedParts: integer('pruned_parts').notNull().default(0),
    prunedTokens: integer('pruned_tokens').notNull().default(0),
    model: text('model'),
    usageInput: integer('usage_input'),
    usageOutput: integer('usage_output'),
    costUsd: numeric('cost_usd', { precision: 12, scale: 6, mode: 'number' }),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    /**
     * Why a completed compaction's summary was written by the truncate fallback: the code and
     * message of the summarizer's final failure (its `error` stays null: it completed).
     */
    fallbackCode: text('fallback_code'),
    fallbackMessage: text('fallback_message'),
    /**
     * What the completed compaction cost in prompt cache (core `cacheEffect`), null where it was
     * not computed (not completed, or completed before these columns existed). The costs are
     * null too when the session's model has no known price; the break-even also when never.
     */
    cacheInvalidatedTokens: integer('cache_invalidated_tokens'),
    cacheRewriteCostUsd: numeric('cache_rewrite_cost_usd', { precision: 14, scale: 8, mode: 'number' }),
    cacheSavingPerTurnUsd: numeric('cache_saving_per_turn_usd', { precision: 14, scale: 8, mode: 'number' }),
    cacheBreakEvenTurns: integer('cache_break_even_turns'),
    details: jsonb('details')
      .notNull()
      .default(sql`'{}'::jsonb`),
    /**
     * What the summarize step produced, saved (fenced) the moment the LLM answered: a retry after
     * a crash or a failed finalize writes this instead of paying for the summary again.
     */
    summaryDraft: jsonb('summary_draft'),
    /**
     * The lowest seq of a covered message that changed while the compaction ran (a tool result
     * PATCHed in): finalize refuses to move the boundary past it, and the summary is written
     * again from what the message holds now. Reset when the summarize step starts.
     */
    changedSeq: integer('changed_seq'),
    requestedAt: timestamp('requested_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** Last sign of life of the attempt: set on claim and on every fenced write (the reconciler's clock). */
    progressAt: timestamp('progress_at', { withTimezone: true, mode: 'date' }),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
    /** When a revert undid it (status `reverted`). */
    revertedAt: timestamp('reverted_at', { withTimezone: true, mode: 'date' }),
    /**
     * Set by a revert: usage reports after `servedFromSeq` (its last summary's seq, else the end of
     * its covered range) up to `revertedSeq` (the session's last seq then) were measured on the
     * view the revert undid, so the hybrid estimate does not calibrate on them.
     */
    servedFromSeq: integer('served_from_seq'),
    revertedSeq: integer('reverted_seq'),
  },
  (t) => [
    // At most one active compaction per session, enforced by the database, not only the queue.
    uniqueIndex('compactions_one_active_per_session_uq')
      .on(t.sessionPk)
      .where(sql`${t.status} in ('pending', 'running')`),
    // The context view, every status and every append read the latest completed compaction of a
    // session (`order by finished_at desc, requested_at desc limit 1`): in the index's order, so
    // it is the first entry, not a sort of all the session's compactions (which grew with them).
    index('compactions_session_latest_completed_idx')
      .on(t.sessionPk, t.finishedAt.desc().nullsFirst(), t.requestedAt.desc().nullsFirst())
      .where(sql`${t.status} = 'completed'`),
    // The status's last finished compaction, whatever its outcome (`order by finished_at desc limit 1`).
    index('compactions_session_finished_idx')
      .on(t.sessionPk, t.finishedAt.desc().nullsFirst())
      .where(sql`${t.finishedAt} is not null`),
    // The cap on a tenant's active compactions counts them (`limit` the cap): at most that many
    // entries are read, however many sessions or finished compactions the tenant has.
    index('compactions_tenant_active_idx')
      .on(t.tenantId)
      .where(sql`${t.status} in ('pending', 'running')`),
    // The reconciler scans active compactions by how long they have been silent.
    index('compactions_active_progress_idx')
      .on(t.status, t.progressAt)
      .where(sql`${t.status} in ('pending', 'running')`),
    // The status statement's newest revert of a session (see `revertedSeq`): one probe.
    index('compactions_session_reverted_idx')
      .on(t.sessionPk, t.revertedSeq.desc().nullsLast(), t.servedFromSeq)
      .where(sql`${t.status} = 'reverted'`),
    // History listing, newest first, paginated by request time.
    index('compactions_session_requested_idx').on(t.sessionPk, t.requestedAt),
    // A repeated request with the same Idempotency-Key returns the same compaction.
    uniqueIndex('compactions_session_idempotency_uq')
      .on(t.sessionPk, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} is not null`),
  ],
);

/**
 * An `Idempotency-Key` whose manual request joined the compaction already active instead of
 * creating one (a key that created its compaction is that row's `idempotency_key`). The key
 * stays bound to what that request asked for: the key again with the same body returns the
 * compaction it joined, with another body it is a 409, as for a key that created one.
 */
export const compactionJoinKeys = pgTable(
  'compaction_join_keys',
  {
    sessionPk: bigint('session_pk', { mode: 'number' })
      .notNull()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    idempotencyKey: text('idempotency_key').notNull(),
    compactionId: text('compaction_id')
      .notNull()
      .references(() => compactions.id, { onDelete: 'cascade' }),
    /** What the request asked for (the strategy resolved, as a created row stores it). */
    strategy: text('strategy', { enum: ['summarize', 'truncate', 'topic'] }).notNull(),
    keepRecentTokens: integer('keep_recent_tokens'),
    instructions: text('instructions'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.sessionPk, t.idempotencyKey] }),
    // Deleting a session's compactions looks their keys up by compaction.
    index('compaction_join_keys_compaction_idx').on(t.compactionId),
  ],
);

/** Every step attempt of a compaction, for progress events and post-mortems. */
export const compactionSteps = pgTable(
  'compaction_steps',
  {
    pk: bigint('pk', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    compactionId: text('compaction_id')
      .notNull()
      .references(() => compactions.id, { onDelete: 'cascade' }),
    step: text('step', { enum: ['prune', 'summarize', 'finalize'] }).notNull(),
    attempt: integer('attempt').notNull(),
    status: text('status', { enum: ['running', 'completed', 'failed'] }).notNull(),
    detail: jsonb('detail')
      .notNull()
      .default(sql`'{}'::jsonb`),
    errorMessage: text('error_message'),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    // Steps are listed per compaction in order.
    index('compaction_steps_compaction_idx').on(t.compactionId, t.pk),
  ],
);
