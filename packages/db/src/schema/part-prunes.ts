import { bigint, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Which tool outputs are pruned (lazy deletion: the output stays in `parts`). A narrow table of
 * its own, keyed like the part it marks (session, message seq, position), because pruning marks
 * tens of thousands of parts at once: measured on 44,600 parts with ~2 KB inline outputs,
 * updating a `compacted_at` column in `parts` rewrote every wide row (no HOT update, 39 MB of
 * WAL, 410 ms), where inserting here writes 8.5 MB in 165 ms.
 *
 * No foreign keys, on purpose: an FK to `parts` takes a row lock on every referenced part
 * (19 MB of WAL, 500 ms for the same insert), one to `sessions` adds 50 %. `deleteSession`
 * deletes a session's rows here in its own transaction; part keys are never reused.
 */
export const partPrunes = pgTable(
  'part_prunes',
  {
    sessionPk: bigint('session_pk', { mode: 'number' }).notNull(),
    /** The pruned part's message seq and position in that message (`parts.seq`, `parts.idx`). */
    seq: integer('seq').notNull(),
    idx: integer('idx').notNull(),
    compactedAt: timestamp('compacted_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** The compaction or prune job that cleared it, for history queries. */
    compactedBy: text('compacted_by').notNull(),
  },
  // One index serves every read: a part's lookup, and the newest pruned part of a range (prune's stop).
  (t) => [primaryKey({ name: 'part_prunes_pk', columns: [t.sessionPk, t.seq, t.idx] })],
);
