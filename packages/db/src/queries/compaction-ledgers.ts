import { sql, type SQL } from 'drizzle-orm';
import { emptyLedger, ledgerFromStored, type ArtifactLedger } from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';

/** A session's ledger as of one completed compaction, with the constraints its summary did not list. */
export interface StoredLedger {
  compactionId: string;
  ledger: ArtifactLedger;
  unlistedConstraints: string[];
}

function storedLedgerOf(row: Record<string, unknown>): StoredLedger {
  const constraints = row.unlisted_constraints;
  return {
    compactionId: String(row.compaction_id),
    // A row this code cannot read (another version wrote it) counts as knowing nothing, rather
    // than failing every later compaction of the session.
    ledger: ledgerFromStored(row.ledger) ?? emptyLedger(),
    unlistedConstraints: Array.isArray(constraints)
      ? constraints.filter((c): c is string => typeof c === 'string')
      : [],
  };
}

/**
 * The ledger in force for a session: the one its latest completed compaction stored (other than
 * `excludingCompactionId`, the compaction finalizing now), or `null` when that compaction stored
 * none (there is none, or it completed before ledgers were stored). Reads one compaction through
 * the latest-completed index and its ledger row by primary key.
 */
export async function selectLatestLedger(
  db: DbOrTx,
  sessionPk: number,
  excludingCompactionId: string | null = null,
): Promise<StoredLedger | null> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`
    select l.compaction_id, l.ledger, l.unlisted_constraints
    from (
      select c.id from compactions c
      where c.session_pk = ${sessionPk} and c.status = 'completed'
        and c.id is distinct from ${excludingCompactionId}::text
      order by c.finished_at desc nulls first, c.requested_at desc nulls first
      limit 1
    ) latest
    join compaction_ledgers l on l.compaction_id = latest.id`,
  );
  return rows[0] ? storedLedgerOf(rows[0]) : null;
}

/** The ledger a compaction leaves in force, as its completion stores it. */
export interface LedgerEntry {
  compactionId: string;
  sessionPk: number;
  ledger: ArtifactLedger;
  unlistedConstraints: string[];
}

/** Stores (or, for a retried finalize, replaces) the ledger a compaction leaves in force. */
export async function upsertCompactionLedger(db: DbOrTx, entry: LedgerEntry): Promise<void> {
  await executePrepared(db, upsertCompactionLedgerSql(entry));
}

/**
 * {@link upsertCompactionLedger}'s statement; with `completedAtFence`, it writes only when the
 * compaction is completed at that fence (db `completeCompaction` sends it right after the
 * completion, in the same transaction: a stale attempt or a completion refused writes nothing).
 */
export function upsertCompactionLedgerSql(entry: LedgerEntry, completedAtFence?: number | null): SQL {
  const owned =
    completedAtFence === undefined
      ? sql``
      : sql` where exists (
          select 1 from compactions c
          where c.id = ${entry.compactionId}${completedAtFence === null ? sql`` : sql` and c.fence = ${completedAtFence}`}
            -- Found by its key (see the completion's size statement: a plain status condition
            -- made the partial index of completed compactions a generic plan's candidate).
            and case when c.status = 'completed' then true else false end)`;
  return sql`
    insert into compaction_ledgers (compaction_id, session_pk, ledger, unlisted_constraints)
    select ${entry.compactionId}, ${entry.sessionPk}::bigint, ${JSON.stringify(entry.ledger)}::jsonb,
      ${JSON.stringify(entry.unlistedConstraints)}::jsonb${owned}
    on conflict (compaction_id) do update set
      ledger = excluded.ledger, unlisted_constraints = excluded.unlisted_constraints`;
}
