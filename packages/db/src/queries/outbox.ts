import { and, asc, isNull, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { outbox } from '../schema';

/** An outbox entry: a job to enqueue, written in the transaction of the work it stands for. */
export type OutboxRow = typeof outbox.$inferSelect;
export type NewOutboxEntry = Pick<typeof outbox.$inferInsert, 'jobName' | 'jobId' | 'payload'>;

/** Records jobs to enqueue; call inside the transaction that creates their work. */
export async function insertOutboxEntries(db: DbOrTx, entries: NewOutboxEntry[]): Promise<OutboxRow[]> {
  if (entries.length === 0) return [];
  return db.insert(outbox).values(entries).returning();
}

/** Marks entries as enqueued (safe to repeat). */
export async function markOutboxDispatched(db: DbOrTx, pks: number[], at: Date): Promise<void> {
  if (pks.length === 0) return;
  await db
    .update(outbox)
    .set({ dispatchedAt: at })
    .where(and(sql`${outbox.pk} = any(${sql.param(pks)}::bigint[])`, isNull(outbox.dispatchedAt)));
}

/**
 * Entries never dispatched and older than `olderThanMs` (the API dispatches right after commit;
 * the grace keeps the reconciler from racing it), oldest first. Reads only the partial index.
 */
export async function listUndispatchedOutbox(
  db: DbOrTx,
  { olderThanMs, limit }: { olderThanMs: number; limit: number },
): Promise<OutboxRow[]> {
  return db
    .select()
    .from(outbox)
    .where(
      and(
        isNull(outbox.dispatchedAt),
        lt(outbox.createdAt, sql`now() - make_interval(secs => ${olderThanMs / 1000})`),
      ),
    )
    .orderBy(asc(outbox.createdAt))
    .limit(limit);
}

/** Deletes dispatched entries older than `olderThanMs` (the outbox is not a history). */
export async function pruneDispatchedOutbox(db: DbOrTx, { olderThanMs }: { olderThanMs: number }) {
  const deleted = await db
    .delete(outbox)
    .where(
      and(
        sql`${outbox.dispatchedAt} is not null`,
        lt(outbox.dispatchedAt, sql`now() - make_interval(secs => ${olderThanMs / 1000})`),
      ),
    )
    .returning({ pk: outbox.pk });
  return deleted.length;
}
