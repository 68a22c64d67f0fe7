import { bigint, index, integer, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { sessions } from './sessions';

/**
 * One row per prune job that ran (after a finished turn, or `POST /prune`): what it marked and
 * what that cost in prompt cache (core `cacheEffect`). A job retried after it recorded keeps its
 * first row. The compaction's own prune step is part of the compaction's record instead.
 */
export const pruneRuns = pgTable(
  'prune_runs',
  {
    jobId: text('job_id').primaryKey(),
    sessionPk: bigint('session_pk', { mode: 'number' })
      .notNull()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    /** The session's tenant (copied): per-tenant history without reading its sessions. */
    tenantId: text('tenant_id').notNull(),
    trigger: text('trigger', { enum: ['turn', 'manual'] }).notNull(),
    /** Tool outputs the job marked, and their output tokens as the selection counted them. */
    parts: integer('parts').notNull(),
    tokens: integer('tokens').notNull(),
    /**
     * The context's size before and after the marks: the latest usage report's context plus the
     * tokens stored after it (the view's stored sum without a report); after = before − saved.
     */
    tokensBefore: integer('tokens_before').notNull(),
    tokensAfter: integer('tokens_after').notNull(),
    cacheInvalidatedTokens: integer('cache_invalidated_tokens').notNull(),
    /** USD; null when the session's model has no known price. */
    cacheRewriteCostUsd: numeric('cache_rewrite_cost_usd', { precision: 14, scale: 8, mode: 'number' }),
    cacheSavingPerTurnUsd: numeric('cache_saving_per_turn_usd', { precision: 14, scale: 8, mode: 'number' }),
    cacheBreakEvenTurns: integer('cache_break_even_turns'),
    ranAt: timestamp('ran_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    index('prune_runs_session_ran_idx').on(t.sessionPk, t.ranAt),
    index('prune_runs_tenant_ran_idx').on(t.tenantId, t.ranAt),
  ],
);
