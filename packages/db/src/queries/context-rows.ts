import { sql, type SQL } from 'drizzle-orm';
import type { CompactionBoundary } from '@compactor/core';
import type { DbOrTx } from '../client';
import { boundaryFromRow, type MessageRow, type PartRow } from '../mappers';
import { executePrepared } from '../prepared';
import { compactions, messages } from '../schema';
import { partColumns, partRowMapper, viewMessagesWithParts } from './parts';
import { rowMapper, selectList } from './raw-rows';
import { viewBoundsCte, viewMessagesSql } from './view-bounds';

/** The context view's stored rows, as one statement reads them. */
export interface ContextViewRows {
  /** In no particular order (see `messagesFromRows`). */
  messages: MessageRow[];
  parts: PartRow[];
  /** The latest completed compaction (null without one): the one the view's bounds read. */
  compaction: CompactionBoundary | null;
}

/** Only what core's assembly needs of the compaction (`boundaryFromRow`); the other columns map to null. */
const compactionRowOf = rowMapper(compactions, 'c_');
export const MESSAGE_COLUMNS = selectList(messages, 'm', 'm_');
const messageRowOf = rowMapper(messages, 'm_');
export const PART_COLUMNS = partColumns('p_', { omitPrunedOutputs: true, clamped: true });
const partRowOf = partRowMapper('p_');

/**
 * The context view in ONE statement: its messages (`viewMessagesSql`, the bounded filter every
 * view query shares), each message's parts (pruned outputs left unread), and the latest
 * completed compaction that defines it (the row `bounds` already reads). One statement is one snapshot, so a
 * compaction completing meanwhile is seen whole or not at all without a transaction around
 * several reads (which cost begin, three statements and commit: five round trips).
 *
 * One row per part (a message's columns repeated on each; a message without parts comes once),
 * in no order. The parts are read per message through a lateral subquery whose `offset 0` keeps
 * the planner from flattening it into a hash join over the whole parts table (it cannot know
 * how short the view is: the boundary is known at run time), so each kept message is one index
 * lookup; each part's prune mark too (a plain join there was hashed, with a scan of the whole
 * `part_prunes` table for every message, whenever that table looked small to the planner), and
 * a clamped part's excerpt (`clampJoin`: the view shows a clamped part as its clamp says). The
 * compaction comes on every row (five narrow columns), alone on one row when the view is empty
 * (`bounds` has exactly one row).
 */
export async function selectContextRows(
  db: DbOrTx,
  sessionPk: number,
  { pinSystemMessages }: { pinSystemMessages: boolean },
): Promise<ContextViewRows> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    contextRowsSql(sessionPk, { pinSystemMessages }),
  );
  return contextRowsFromResult(rows);
}

/** The statement of {@link selectContextRows}, for a caller that sends it with others. */
export function contextRowsSql(
  sessionPk: number,
  { pinSystemMessages }: { pinSystemMessages: boolean },
): SQL {
  return sql`
    with bounds as (${viewBoundsCte(sessionPk)}),
    v as (${viewMessagesSql(sessionPk, pinSystemMessages, MESSAGE_COLUMNS)})
    select c.*, r.* from (${BOUNDS_COMPACTION}) c
    left join (${viewMessagesWithParts(PART_COLUMNS)}) r on true`;
}

/** The compaction's five narrow columns, from `bounds`, as {@link contextRowsFromResult} reads them. */
export const BOUNDS_COMPACTION = sql`
  select b.compaction_id as c_id, 'completed' as c_status, b.boundary_seq as c_boundary_seq,
         b.summary_ids as c_summary_message_ids, b.compaction_finished_at as c_finished_at
  from bounds b`;

/** What {@link contextRowsSql} returned (or a statement with its columns), read. */
export function contextRowsFromResult(rows: Record<string, unknown>[]): ContextViewRows {
  // Unordered: `messagesFromRows` puts messages in seq order and each one's parts by position
  // (a sort here would copy every output's text once more).
  const messageRows = new Map<unknown, MessageRow>();
  const partRows: PartRow[] = [];
  for (const row of rows) {
    if (row.m_pk === null) continue; // the empty view's one row
    if (!messageRows.has(row.m_pk)) messageRows.set(row.m_pk, messageRowOf(row));
    if (row.p_pk !== null) partRows.push(partRowOf(row));
  }
  const first = rows[0];
  return {
    messages: [...messageRows.values()],
    parts: partRows,
    compaction: first && first.c_id != null ? boundaryFromRow(compactionRowOf(first)) : null,
  };
}
