import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Jobs to enqueue, written in the same transaction as the work they stand for (a compaction
 * row, a prune request). The API enqueues right after commit and marks the entry dispatched;
 * the reconciler enqueues whatever a crash between commit and enqueue left behind.
 */
export const outbox = pgTable(
  'outbox',
  {
    pk: bigint('pk', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    /** The job catalog's name (`compact`, `prune`). */
    jobName: text('job_name').notNull(),
    /** The BullMQ job id: enqueueing it twice is a no-op. */
    jobId: text('job_id').notNull(),
    payload: jsonb('payload').notNull(),
    /**
     * The job's queue priority (BullMQ: lower runs first, 0 = none): a compaction's rank in its
     * tenant's backlog, so the reconciler's enqueue keeps the place the first one would have had.
     */
    priority: integer('priority').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    dispatchedAt: timestamp('dispatched_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    // The reconciler reads only what was never dispatched, oldest first.
    index('outbox_undispatched_idx')
      .on(t.createdAt)
      .where(sql`${t.dispatchedAt} is null`),
    // The reconciler deletes dispatched entries by age: without this it scans the whole table.
    index('outbox_dispatched_idx')
      .on(t.dispatchedAt)
      .where(sql`${t.dispatchedAt} is not null`),
  ],
);
