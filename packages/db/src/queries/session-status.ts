import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import {
  sessionCompactionsFromRows,
  sessionCompactionsSql,
  type CompactionColumnPrefix,
  type SessionCompactions,
} from './compactions';
import { contextTokenStatsSql, statsFromRow, type ContextTokenStats } from './context-tokens';

/** The compaction columns' prefix: no stats column starts with it. */
const COMPACTION_PREFIX: CompactionColumnPrefix = 'c_';

/** What a session's status and its auto trigger decide on. */
export interface SessionStatusInputs extends SessionCompactions {
  stats: ContextTokenStats;
}

/**
 * {@link contextTokenStats} and {@link findSessionCompactions} in one statement: every append
 * and every status read needs both, and on a busy two-CPU machine each statement sent costs
 * about a quarter of a millisecond of the sender's CPU (the socket write that wakes a backend),
 * plus a second pooled connection when the two ran side by side. One row per compaction found
 * (at least one), the stats repeated on each.
 */
export async function sessionStatusInputs(
  db: DbOrTx,
  sessionPk: number,
  { pinSystemMessages = true }: { pinSystemMessages?: boolean } = {},
): Promise<SessionStatusInputs> {
  const result = await executePrepared<Record<string, unknown>>(
    db,
    sessionStatusInputsSql(sessionPk, { pinSystemMessages }),
  );
  return statusInputsFromRows(result.rows);
}

/** The statement of {@link sessionStatusInputs}, for a caller that sends it with others. */
export function sessionStatusInputsSql(
  sessionPk: number,
  { pinSystemMessages = true }: { pinSystemMessages?: boolean } = {},
): SQL {
  return sql`
    with stats as materialized (${contextTokenStatsSql(sessionPk, pinSystemMessages)})
    select s.*, c.* from stats s
    left join (${sessionCompactionsSql(sessionPk, COMPACTION_PREFIX)}) c on true`;
}

/** What {@link sessionStatusInputsSql} returned, read. */
export function statusInputsFromRows(rows: Record<string, unknown>[]): SessionStatusInputs {
  const first = rows[0];
  if (!first) throw new Error('session status inputs returned no row');
  return { stats: statsFromRow(first), ...sessionCompactionsFromRows(rows, COMPACTION_PREFIX) };
}
