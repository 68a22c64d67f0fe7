import { sql, type SQL } from 'drizzle-orm';

/**
 * The session a view query reads: its pk, or an SQL expression that yields it inside the same
 * statement (a scalar subquery on an earlier CTE, as the claim's `(select session_pk from claimed)`).
 */
export type SessionRef = number | SQL;

/** Past every seq (seqs are int4): a first kept seq that keeps nothing. */
export const INT4_MAX = 2_147_483_647;

/**
 * SQL fragments that define the context view once, for every query that reads it (the view's
 * rows, the status sums, prune selection). Each is bounded by what the view keeps: index range
 * scans from the boundary, never a scan of the session's history or of another session's rows.
 *
 * `viewBoundsCte` is the body of a CTE that must be named `bounds`: exactly one row with
 *  - `first_kept`: the first kept seq of the latest completed compaction (its boundary; with
 *    none, the seq after its summaries; with neither, nothing is kept but pinned messages: core
 *    `assembleContext`'s rule), 0 without a compaction;
 *  - `summary_ids`: that compaction's summary message ids (`'{}'` without one);
 *  - `covers_through_seq`: the last seq it covered (null without one);
 *  - `compaction_id`, `boundary_seq`, `compaction_finished_at`: that compaction's own columns
 *    (null without one), for a reader that returns the compaction with the view.
 * A pending, running or failed compaction changes nothing: only `completed` rows count.
 */
export function viewBoundsCte(sessionPk: SessionRef): SQL {
  return sql`
    select case when l.summary_message_ids is null then 0
                else coalesce(l.boundary_seq,
                       (select max(s.seq) + 1 from messages s where s.session_pk = ${sessionPk} and s.id = any(l.summary_message_ids)),
                       ${INT4_MAX})
           end::int as first_kept,
           coalesce(l.summary_message_ids, '{}'::text[]) as summary_ids,
           l.covers_through_seq,
           l.id as compaction_id, l.boundary_seq, l.finished_at as compaction_finished_at
    from (select 1) one
    left join lateral (
      select id, boundary_seq, summary_message_ids, covers_through_seq, finished_at from compactions
      where session_pk = ${sessionPk} and status = 'completed'
      order by finished_at desc, requested_at desc limit 1
    ) l on true`;
}

/**
 * The context view's messages (rows of `messages m`, projecting `columns`), as a `UNION ALL` of
 * three bounded branches over the CTE `bounds`: every non-summary message from the first kept
 * seq on (a range scan of `messages_session_seq_uq`), the summary messages (by id), and, when
 * `pinSystemMessages`, the session's own system messages before the first kept seq (the partial
 * index `messages_session_pinned_idx`). The branches are disjoint, so nothing is read twice.
 * (One WHERE with the three conditions OR'd read every message of the session.)
 */
export function viewMessagesSql(sessionPk: SessionRef, pinSystemMessages: boolean, columns: SQL): SQL {
  // The first two branches are laterals whose every plan is bounded. As joins, a generic plan
  // made while the tables were small (a new database: statistics say a session has one message)
  // scanned the whole session through another index and filtered it, and a connection keeps
  // that plan: replaying 6,000 messages on a new database, the status statement went from 0.25
  // to 1.7 ms. In order of seq, the range scan of `messages_session_seq_uq` is the only plan
  // without a sort. The summary messages were written after everything the compaction covered
  // (finalize gives them the next seqs), so they lie past `covers_through_seq`: whichever index
  // the planner picks for them, by id or by seq, reads only from there (a plan by seq alone,
  // filtering ids, read the whole session: 0.76 ms per summary message at 6,000 messages). A
  // compaction completed without a claim (tests write such rows) has no covered range.
  return sql`
    select ${columns} from bounds b cross join lateral (
      select * from messages k
      where k.session_pk = ${sessionPk} and k.seq >= b.first_kept and not k.summary
      order by k.seq offset 0
    ) m
    union all
    select ${columns} from bounds b cross join lateral unnest(b.summary_ids) as s(id)
    cross join lateral (
      select * from messages k
      where k.session_pk = ${sessionPk} and k.id = s.id and k.seq > coalesce(b.covers_through_seq, -1)
      offset 0
    ) m
    union all
    select ${columns} from bounds b join messages m
      on m.session_pk = ${sessionPk} and ${pinSystemMessages}::boolean
         and m.role = 'system' and not m.summary and m.seq < b.first_kept`;
}
