import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import {
  BOUNDS_COMPACTION,
  contextRowsFromResult,
  MESSAGE_COLUMNS,
  PART_COLUMNS,
  type ContextViewRows,
} from './context-rows';
import { viewMessagesWithParts } from './parts';
import { viewBoundsCte, viewMessagesSql } from './view-bounds';

/**
 * The context view as {@link selectContextRows} reads it, but with the rows of only the messages
 * a caller does not hold already: each message of the view comes with its version (`versions`),
 * and its rows only when that version is not among `known`.
 */
export interface ContextDeltaRows extends ContextViewRows {
  /**
   * One per message of the view, in no order: `<message pk>:<versions of its rows>` (see
   * {@link contextDeltaSql}). Equal strings mean equal rows, byte for byte. The messages and
   * parts are those whose version was not among `known`.
   */
  versions: string[];
}

/**
 * The context view in ONE statement (one snapshot, like `selectContextRows`), for a reader that
 * keeps the rows it read last time: every message of the view with its version, and the rows of
 * those whose version is not in `known`.
 *
 * A message's version names every row version the view reads of it: its own row, each part,
 * each part's prune mark and clamp, by their Postgres `xmin` (the transaction that wrote that
 * row version: any update, even one that writes the same values, makes a new one), parts by pk.
 * A part added, removed, updated, pruned, unpruned or clamped changes it; so does the message's
 * own row. Which messages are in the view comes from the same bounds as `selectContextRows`, so
 * a compaction that completes or is reverted changes the list itself. An xid repeats only after
 * 2^32 transactions (wraparound), far past any memo's life.
 */
export async function selectContextDelta(
  db: DbOrTx,
  sessionPk: number,
  { pinSystemMessages, known }: { pinSystemMessages: boolean; known: readonly string[] },
): Promise<ContextDeltaRows> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    contextDeltaSql(sessionPk, { pinSystemMessages, known }),
  );
  // On one row: found by its value, not by where the window put it.
  const versions = rows.find((row) => row.versions !== null)?.versions as string[] | undefined;
  return { versions: versions ?? [], ...contextRowsFromResult(rows) };
}

/** The statement of {@link selectContextDelta}. */
function contextDeltaSql(
  sessionPk: number,
  { pinSystemMessages, known }: { pinSystemMessages: boolean; known: readonly string[] },
): SQL {
  // `versions` rides on the first row only (every row carries the compaction's five narrow
  // columns, as in selectContextRows; a few hundred versions on each would not be narrow).
  return sql`
    with bounds as (${viewBoundsCte(sessionPk)}),
    members as (${viewMessagesSql(sessionPk, pinSystemMessages, sql`m.pk as m_pk`)}),
    versioned as (
      select mm.pk as m_pk, mm.pk::text || ':' || mm.xmin::text || coalesce((
        select string_agg(
          p.pk::text || '.' || p.xmin::text || '.' || coalesce(pp.xmin::text, '') || '.' || coalesce(c.xmin::text, ''),
          ',' order by p.pk)
        from parts p
        left join lateral (
          select x.xmin from part_prunes x
          where x.session_pk = p.session_pk and x.seq = p.seq and x.idx = p.idx offset 0
        ) pp on true
        left join lateral (
          select k.xmin from part_clamps k where p.clamped and k.part_pk = p.pk offset 0
        ) c on true
        where p.message_pk = mm.pk
      ), '') as version
      -- Each message by its primary key, as laterals (offset 0): the planner cannot know how
      -- short the view is, and as joins it hashed the whole messages table (every tenant's).
      from members cross join lateral (
        select k.pk, k.xmin from messages k where k.pk = members.m_pk offset 0
      ) mm
    ),
    v as (
      select ${MESSAGE_COLUMNS} from (
        select s.m_pk from versioned s
        -- A hashed subplan (a "<> all" of the array would compare each version with every known one).
        where s.version not in (select unnest(${sql.param([...known])}::text[]))
      ) s cross join lateral (select * from messages k where k.pk = s.m_pk offset 0) m
    )
    select c.*, case when row_number() over () = 1
                     then (select array_agg(version) from versioned) end as versions, r.*
    from (${BOUNDS_COMPACTION}) c
    left join (${viewMessagesWithParts(PART_COLUMNS)}) r on true`;
}
