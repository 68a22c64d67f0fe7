import { sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../client';
import { ConflictError, NotFoundError } from '../errors';
import type { CompactionRow } from '../mappers';
import { compactions } from '../schema';
import { compactionFromRow, findLatestCompletedCompaction } from '../queries/compactions';
import { firstKeptSeq } from '../queries/covered-changes';
import { selectList } from '../queries/raw-rows';
import { INT4_MAX } from '../queries/view-bounds';

/** Why {@link revertCompaction} refused (`details.reason` of its {@link ConflictError}). */
export type RevertRefusal = 'compaction_active' | 'not_completed' | 'not_latest' | 'history_purged';

/** What {@link revertCompaction} did. */
export interface RevertedCompaction {
  /** The compaction, now `reverted`. */
  compaction: CompactionRow;
  session: { pk: number; id: string };
  /** The compaction that defines the context view again; null when none does. */
  restored: CompactionRow | null;
  /** Prune marks and clamps the revert removed or put back, for the caller's log. */
  unpruned: number;
  unclamped: number;
}

/**
 * Undoes the session's latest completed compaction, in ONE transaction: a context reader sees
 * the compaction's view or the one before it, never half of either. The compaction becomes
 * `reverted` (its row, sizes, cost and step records stay: what it did and paid for), which takes
 * it out of the view's rule (the latest `completed` compaction), so the one before it defines the
 * view again; its prune marks are removed (a prune job's marks, made after it or not, stay: they
 * are not the compaction's), and its clamps are removed or, where they replaced an earlier
 * compaction's clamp of the same part, that clamp is put back (`part_clamps.previous`). Its
 * summary messages stay in the raw history, as every compaction's do; the view no longer shows
 * them (it shows only the summaries of the compaction that defines it). Messages appended after
 * the compaction stay, after the restored boundary.
 *
 * The locks a completion takes, in its order: the compaction's row, then the session's (appends
 * wait for it). Refusals write nothing ({@link ConflictError} with `reason`): another compaction
 * of the session pending or running (`compaction_active`), a compaction that is not completed
 * (`not_completed`: reverted already, failed, skipped, unfinished), one that is not the latest
 * completed one (`not_latest`: a later one defines the view; revert that first), and a restored
 * view that would show content the retention purge cleared (`history_purged`). Another tenant's
 * compaction is {@link NotFoundError}.
 */
export async function revertCompaction(
  db: Db,
  input: { tenantId: string; compactionId: string; at: Date },
): Promise<RevertedCompaction> {
  return db.transaction(async (tx) => {
    const target = await lockTarget(tx, input);
    const refuse = (reason: RevertRefusal, message: string, details: Record<string, unknown> = {}) =>
      new ConflictError(message, { reason, compactionId: target.compaction.id, ...details });
    if (target.compaction.status !== 'completed')
      throw refuse('not_completed', `compaction ${target.compaction.id} is ${target.compaction.status}`, {
        status: target.compaction.status,
      });
    const sessionPk = target.compaction.sessionPk;
    const active = await activeCompactionId(tx, sessionPk);
    if (active !== null)
      throw refuse('compaction_active', `compaction ${active} of the session is still running`, {
        activeCompactionId: active,
      });
    const latest = await findLatestCompletedCompaction(tx, sessionPk);
    if (latest?.id !== target.compaction.id)
      throw refuse('not_latest', 'only the latest completed compaction of a session can be reverted', {
        latestCompactionId: latest?.id ?? null,
      });

    const undoneFirstKept = await firstKeptSeq(tx, sessionPk);
    const compaction = await markReverted(tx, target.compaction.id, input.at);
    const restoredFirstKept = await firstKeptSeq(tx, sessionPk);
    const unpruned = await removePruneMarks(tx, sessionPk, target.compaction, restoredFirstKept);
    const unclamped = await undoClamps(tx, sessionPk, target.compaction.id);
    if (await purgedInRestoredView(tx, sessionPk, restoredFirstKept, undoneFirstKept))
      throw refuse('history_purged', 'the retention purge cleared content the restored view would show');
    return {
      compaction,
      session: { pk: sessionPk, id: target.sessionId },
      restored: await findLatestCompletedCompaction(tx, sessionPk),
      unpruned,
      unclamped,
    };
  });
}

/** The tenant's compaction, its row locked, then its session's row (a completion's order). */
async function lockTarget(
  tx: DbOrTx,
  input: { tenantId: string; compactionId: string },
): Promise<{ compaction: CompactionRow; sessionId: string }> {
  const { rows } = await tx.execute<Record<string, unknown>>(sql`
    select ${selectList(compactions, 'c', '')} from compactions c
    where c.id = ${input.compactionId} and c.tenant_id = ${input.tenantId}
    for update`);
  if (!rows[0]) throw new NotFoundError('compaction not found');
  const compaction = compactionFromRow(rows[0]);
  const session = await tx.execute<{ id: string }>(
    sql`select id from sessions where pk = ${compaction.sessionPk} and tenant_id = ${input.tenantId} for update`,
  );
  const sessionId = session.rows[0]?.id;
  if (sessionId === undefined) throw new NotFoundError('compaction not found');
  return { compaction, sessionId };
}

async function activeCompactionId(tx: DbOrTx, sessionPk: number): Promise<string | null> {
  const { rows } = await tx.execute<{ id: string }>(
    sql`select id from compactions where session_pk = ${sessionPk} and status in ('pending', 'running') limit 1`,
  );
  return rows[0]?.id ?? null;
}

/**
 * The compaction, `reverted`, with the seqs whose usage reports measured its view: after its last
 * summary (the seq its view was first served from; without one, the end of its covered range,
 * which may leave out a few reports that were still good) up to the session's last seq now.
 */
async function markReverted(tx: DbOrTx, id: string, at: Date): Promise<CompactionRow> {
  const { rows } = await tx.execute<Record<string, unknown>>(sql`
    update compactions c
    set status = 'reverted', reverted_at = ${at.toISOString()}::timestamptz,
        served_from_seq = coalesce(
          (select max(m.seq) from messages m where m.session_pk = c.session_pk and m.id = any(c.summary_message_ids)),
          c.covers_through_seq, 0),
        reverted_seq = (select s.last_seq from sessions s where s.pk = c.session_pk)
    where c.id = ${id}
    returning ${selectList(compactions, 'c', '')}`);
  return compactionFromRow(rows[0]!);
}

/**
 * The compaction's own prune marks (its prune step's, `compacted_by` = its id), read where that
 * step could write them: the view it pruned, which is the view the revert restores (a compaction
 * runs alone in its session, and only the latest completed one is reverted), so its kept
 * messages from `restoredFirstKept` through the compaction's covered range, and the pinned system
 * messages before them (by `messages_session_pinned_idx`). Two key ranges, not the session's
 * marks: other prunes' marks behind the restored boundary are never read.
 */
async function removePruneMarks(
  tx: DbOrTx,
  sessionPk: number,
  compaction: Pick<CompactionRow, 'id' | 'coversThroughSeq'>,
  restoredFirstKept: number,
): Promise<number> {
  // A compaction completed without a claim (tests write such rows) has no covered range.
  const throughSeq = compaction.coversThroughSeq ?? INT4_MAX;
  const { rows } = await tx.execute<{ removed: number }>(sql`
    with kept as (
      delete from part_prunes pp
      where pp.session_pk = ${sessionPk} and pp.seq >= ${restoredFirstKept}::int
        and pp.seq <= ${throughSeq}::int and pp.compacted_by = ${compaction.id}
      returning 1
    ),
    pinned as (
      delete from part_prunes pp using messages m
      where m.session_pk = ${sessionPk} and m.role = 'system' and not m.summary
        and m.seq < ${restoredFirstKept}::int
        and pp.session_pk = m.session_pk and pp.seq = m.seq and pp.compacted_by = ${compaction.id}
      returning 1
    )
    select ((select count(*) from kept) + (select count(*) from pinned))::int as removed`);
  return Number(rows[0]?.removed ?? 0);
}

/**
 * The compaction's clamps: one that replaced an earlier clamp of the part becomes that clamp
 * again (its own `previous` included, so an earlier revert can go on), the others go and their
 * parts show whole again.
 */
async function undoClamps(tx: DbOrTx, sessionPk: number, compactionId: string): Promise<number> {
  const { rows } = await tx.execute<{ restored: number; dropped: number }>(sql`
    with mine as (
      select part_pk, previous from part_clamps
      where clamped_by = ${compactionId} and session_pk = ${sessionPk}
    ),
    restored as (
      update part_clamps pc
      set clamped_by = r.clamped_by, clamped_at = r.clamped_at, field = r.field, tokens = r.tokens,
          output_tokens = r.output_tokens, text = r.text, tool_input = r.tool_input,
          tool_output = r.tool_output, tool_error = r.tool_error, previous = r.previous
      from mine m cross join lateral jsonb_populate_record(null::part_clamps, m.previous) r
      where pc.part_pk = m.part_pk and m.previous is not null
      returning pc.part_pk
    ),
    dropped as (
      delete from part_clamps pc using mine m
      where pc.part_pk = m.part_pk and m.previous is null
      returning pc.part_pk
    ),
    unflagged as (
      update parts set clamped = false where pk in (select part_pk from dropped)
    )
    select (select count(*) from restored)::int as restored, (select count(*) from dropped)::int as dropped`);
  return Number(rows[0]?.restored ?? 0) + Number(rows[0]?.dropped ?? 0);
}

/**
 * Whether the restored view would show content the retention purge cleared: a message between
 * the restored boundary and the undone one (the purge clears what lies behind the latest
 * boundary), or a kept output no longer pruned (the purge clears pruned outputs: the compaction's).
 */
async function purgedInRestoredView(
  tx: DbOrTx,
  sessionPk: number,
  restoredFirstKept: number,
  undoneFirstKept: number,
): Promise<boolean> {
  // Both read only purged rows, by the partial indexes of migration 0027: the range a first
  // compaction's revert restores is the session's whole history, and a session never purged has
  // no entry there at all.
  const { rows } = await tx.execute<{ purged: boolean }>(sql`
    select exists (
      select 1 from messages m
      where m.session_pk = ${sessionPk} and m.purged_at is not null and not m.summary
        and m.seq >= ${Math.min(restoredFirstKept, undoneFirstKept)}::int
        and m.seq < ${Math.max(restoredFirstKept, undoneFirstKept)}::int
    ) or exists (
      select 1 from parts p
      where p.session_pk = ${sessionPk} and p.purged_at is not null and p.seq >= ${restoredFirstKept}::int
        and p.type = 'tool'
        and not exists (select 1 from part_prunes pp
                        where pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx)
    ) as purged`);
  return rows[0]?.purged === true;
}
