import { sql } from 'drizzle-orm';
import { bigint, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { compactions } from './compactions';
import { sessions } from './sessions';

/**
 * The artifact ledger (core ledger/) of all that a session's compactions covered, as of one
 * completed compaction: the session's ledger is the row of its latest completed compaction, so a
 * revert puts the previous one's back in force without writing here.
 */
export const compactionLedgers = pgTable('compaction_ledgers', {
  compactionId: text('compaction_id')
    .primaryKey()
    .references(() => compactions.id, { onDelete: 'cascade' }),
  sessionPk: bigint('session_pk', { mode: 'number' })
    .notNull()
    .references(() => sessions.pk, { onDelete: 'cascade' }),
  /** Core `ArtifactLedger`, checked with `ledgerFromStored` where it is read back. */
  ledger: jsonb('ledger').notNull(),
  /** The user's constraints the pinned section had no room for, newest first (`recall?kind=facts`). */
  unlistedConstraints: jsonb('unlisted_constraints')
    .notNull()
    .default(sql`'[]'::jsonb`),
});
