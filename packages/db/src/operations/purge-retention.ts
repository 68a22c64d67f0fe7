import { asc, eq, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { viewBoundsCte } from '../queries/view-bounds';
import { sessions } from '../schema';

/** Rows per statement (one statement, one transaction): short enough never to hold a long lock. */
export const DEFAULT_PURGE_BATCH_SIZE = 1_000;

/** Which tenant's content to purge, and how old it must be. */
export interface RetentionScope {
  tenantId: string;
  /** Only content of messages created before this instant is purged. */
  createdBefore: Date;
}

/** What the purge clears (or, dry, would clear) in one session. */
export interface SessionPurgeReport {
  sessionId: string;
  /** Messages behind the latest completed compaction's boundary: every part's content goes. */
  supersededMessages: number;
  /** The parts of those messages. */
  supersededParts: number;
  /** Pruned tool outputs of other messages (still in the view, shown as a placeholder). */
  prunedOutputs: number;
  /** Bytes of content cleared: text, tool input/output/error and file URLs, as stored (uncompressed). */
  bytes: number;
}

/** One committed batch, for progress lines. */
export interface PurgeBatch {
  sessionId: string;
  kind: 'superseded' | 'pruned';
  /** Messages (superseded) or parts (pruned) in this batch. */
  rows: number;
  bytes: number;
}

/** Bytes of every content column of part `p`; `octet_length` reads the stored size, not the value. */
const PART_CONTENT_BYTES =
  sql.raw(`(coalesce(octet_length(p.text), 0) + coalesce(octet_length(p.tool_input::text), 0)
  + coalesce(octet_length(p.tool_output), 0) + coalesce(octet_length(p.tool_error), 0) + coalesce(octet_length(p.url), 0))`);

/**
 * Whether message `m` is superseded and old enough: behind the first kept seq of the CTE
 * `bounds` (see `viewBoundsCte`, read as a scalar subquery), not a summary (history keeps them), not a system message (the
 * view pins those before the boundary, depending on the session's policy: never purged), not
 * purged yet. Everything the context view serves fails this test, whatever the policy.
 */
function isSupersededMessage(createdBefore: Date): SQL {
  return sql`m.seq < (select first_kept from bounds) and not m.summary and m.role <> 'system'
    and m.purged_at is null and m.created_at < ${createdBefore.toISOString()}::timestamptz`;
}

/**
 * Superseded messages of one session (pk and seq) after seq `afterSeq`: a range scan below the
 * boundary, from where the previous batch ended (without the cursor every batch read the whole
 * superseded range again, purged rows included: 70 ms a batch at 100k messages, quadratic).
 */
function supersededMessagesSql(sessionPk: number, createdBefore: Date, afterSeq = -1): SQL {
  // One table in the FROM, the boundary a scalar subquery: a join with `bounds` loses the index
  // order, and the batch's `order by seq limit` then sorted every remaining row of the range.
  return sql`select m.pk, m.seq from messages m
    where m.session_pk = ${sessionPk} and m.seq > ${afterSeq} and ${isSupersededMessage(createdBefore)}`;
}

/**
 * Pruned tool outputs of one session not yet purged, outside superseded messages (those are
 * purged whole), after the mark `after` (where the previous batch ended, in `part_prunes_pk`
 * order): the marks from the first kept seq on (a range of `part_prunes_pk`), and those of
 * summary and system messages before it (their partial indexes). The marks of superseded
 * messages, most of a long session's, are never read. Each row is looked up by key in a lateral
 * subquery (`offset 0` keeps the planner from flattening it into a hash join over whole tables:
 * it cannot know the boundary when it plans). The context view never reads a pruned output's
 * text (it shows a placeholder), so clearing it changes nothing the model sees.
 */
function prunedOutputsSql(sessionPk: number, createdBefore: Date, after = { seq: -1, idx: -1 }): SQL {
  const cutoff = sql`${createdBefore.toISOString()}::timestamptz`;
  const afterMark = sql`(pp.seq, pp.idx) > (${after.seq}, ${after.idx})`;
  const beforeBoundary = (which: SQL) => sql`
    select o.* from messages m
    cross join lateral (
      select p.pk, pp.seq, pp.idx, coalesce(octet_length(p.tool_output), 0) as bytes
      from parts p join part_prunes pp on pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx
      where p.message_pk = m.pk and p.purged_at is null and ${afterMark} offset 0
    ) o
    where m.session_pk = ${sessionPk} and ${which} and m.seq < (select first_kept from bounds)
      and m.created_at < ${cutoff}`;
  return sql`
    select o.pk, pp.seq, pp.idx, o.bytes from part_prunes pp
    cross join lateral (
      select p.pk, coalesce(octet_length(p.tool_output), 0) as bytes
      from parts p join messages m on m.pk = p.message_pk
      where p.session_pk = pp.session_pk and p.seq = pp.seq and p.idx = pp.idx
        and p.purged_at is null and m.created_at < ${cutoff} offset 0
    ) o
    where pp.session_pk = ${sessionPk} and ${afterMark} and pp.seq >= (select first_kept from bounds)
    union all ${beforeBoundary(sql`m.summary`)}
    union all ${beforeBoundary(sql`m.role = 'system' and not m.summary`)}`;
}

/** The tenant's sessions, by id (the order reports and progress lines follow). */
async function tenantSessions(db: DbOrTx, tenantId: string): Promise<Array<{ pk: number; id: string }>> {
  return db
    .select({ pk: sessions.pk, id: sessions.id })
    .from(sessions)
    .where(eq(sessions.tenantId, tenantId))
    .orderBy(asc(sessions.id));
}

const hasWork = (r: SessionPurgeReport) => r.supersededMessages + r.prunedOutputs > 0;

/**
 * Dry run: what {@link applyRetentionPurge} would clear, per session of the tenant that has
 * anything to clear. Reads counts and stored sizes only; writes nothing.
 */
export async function planRetentionPurge(db: DbOrTx, scope: RetentionScope): Promise<SessionPurgeReport[]> {
  const reports: SessionPurgeReport[] = [];
  for (const session of await tenantSessions(db, scope.tenantId)) {
    const result = await db.execute<{ messages: string; parts: string; pruned: string; bytes: string }>(sql`
      with bounds as (${viewBoundsCte(session.pk)}),
      superseded as (${supersededMessagesSql(session.pk, scope.createdBefore)}),
      superseded_parts as (
        select ${PART_CONTENT_BYTES} as bytes from parts p where p.message_pk in (select pk from superseded)
      ),
      pruned as (${prunedOutputsSql(session.pk, scope.createdBefore)})
      select (select count(*) from superseded) as messages,
             (select count(*) from superseded_parts) as parts,
             (select count(*) from pruned) as pruned,
             (select coalesce(sum(bytes), 0) from superseded_parts) + (select coalesce(sum(bytes), 0) from pruned) as bytes`);
    const row = result.rows[0];
    const report = {
      sessionId: session.id,
      supersededMessages: Number(row?.messages ?? 0),
      supersededParts: Number(row?.parts ?? 0),
      prunedOutputs: Number(row?.pruned ?? 0),
      bytes: Number(row?.bytes ?? 0),
    };
    if (hasWork(report)) reports.push(report);
  }
  return reports;
}

/** How {@link applyRetentionPurge} runs: batch size, the purge time it stamps, a progress callback. */
export interface ApplyPurgeOptions {
  batchSize?: number;
  /** Written to `purged_at`. */
  at?: Date;
  onBatch?: (batch: PurgeBatch) => void;
}

/**
 * Purges the tenant's superseded messages and pruned tool outputs older than the scope's
 * cutoff: their content columns become NULL and `purged_at` is stamped; every row stays, with
 * its seq, role, token counts, usage and metadata, as do compactions, step records and summaries.
 * Each batch is one statement (its own transaction) that re-reads the session's boundary, so a
 * compaction that completes meanwhile only makes more rows eligible, and nothing the context view
 * serves is ever touched. Other tenants' sessions are never read. Returns what it cleared.
 */
export async function applyRetentionPurge(
  db: DbOrTx,
  scope: RetentionScope,
  options: ApplyPurgeOptions = {},
): Promise<SessionPurgeReport[]> {
  const batchSize = options.batchSize ?? DEFAULT_PURGE_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError('batchSize must be a positive integer');
  const at = (options.at ?? new Date()).toISOString();
  const reports: SessionPurgeReport[] = [];
  for (const session of await tenantSessions(db, scope.tenantId)) {
    const report = {
      sessionId: session.id,
      supersededMessages: 0,
      supersededParts: 0,
      prunedOutputs: 0,
      bytes: 0,
    };
    // Superseded messages first: their pruned outputs go with them, and are then not counted twice.
    for (let afterSeq = -1; ;) {
      const result = await db.execute<{
        messages: string;
        parts: string;
        bytes: string;
        last_seq: number;
      }>(sql`
        with bounds as (${viewBoundsCte(session.pk)}),
        batch as (
          select s.pk, s.seq from (${supersededMessagesSql(session.pk, scope.createdBefore, afterSeq)}) s
          order by s.seq limit ${batchSize}
        ),
        sizes as (
          select coalesce(sum(${PART_CONTENT_BYTES}), 0) as bytes from parts p
          where p.message_pk in (select pk from batch)
        ),
        cleared as (
          update parts p set text = null, tool_input = null, tool_output = null, tool_error = null, url = null,
                             clamped = false, purged_at = coalesce(p.purged_at, ${at}::timestamptz)
          where p.message_pk in (select pk from batch)
          returning 1
        ),
        -- An excerpt the view once showed instead of a part (core fit.ts) is its content too.
        unclamped as (
          delete from part_clamps c using parts p
          where c.part_pk = p.pk and p.message_pk in (select pk from batch)
        ),
        marked as (
          update messages m set purged_at = ${at}::timestamptz where m.pk in (select pk from batch) returning 1
        )
        select (select count(*) from marked) as messages, (select count(*) from cleared) as parts,
               (select bytes from sizes) as bytes, (select max(seq) from batch)::int as last_seq`);
      const row = result.rows[0];
      const messages = Number(row?.messages ?? 0);
      if (messages === 0) break;
      afterSeq = Number(row?.last_seq);
      const bytes = Number(row?.bytes ?? 0);
      report.supersededMessages += messages;
      report.supersededParts += Number(row?.parts ?? 0);
      report.bytes += bytes;
      options.onBatch?.({ sessionId: session.id, kind: 'superseded', rows: messages, bytes });
      if (messages < batchSize) break;
    }
    for (let after = { seq: -1, idx: -1 }; ;) {
      const result = await db.execute<{
        parts: string;
        bytes: string;
        last_seq: number;
        last_idx: number;
      }>(sql`
        with bounds as (${viewBoundsCte(session.pk)}),
        batch as (
          select pr.pk, pr.seq, pr.idx, pr.bytes from (${prunedOutputsSql(session.pk, scope.createdBefore, after)}) pr
          order by pr.seq, pr.idx limit ${batchSize}
        ),
        cleared as (
          update parts p set tool_output = null, purged_at = ${at}::timestamptz
          from batch where p.pk = batch.pk
          returning batch.bytes
        ),
        -- The view shows the placeholder for a pruned output: an excerpt of it goes too.
        unclamped as (
          update part_clamps c set tool_output = null from batch where c.part_pk = batch.pk
        ),
        last as (select seq, idx from batch order by seq desc, idx desc limit 1)
        select count(*) as parts, coalesce(sum(bytes), 0) as bytes,
               (select seq from last) as last_seq, (select idx from last) as last_idx
        from cleared`);
      const row = result.rows[0];
      const parts = Number(row?.parts ?? 0);
      if (parts === 0) break;
      after = { seq: Number(row?.last_seq), idx: Number(row?.last_idx) };
      const bytes = Number(row?.bytes ?? 0);
      report.prunedOutputs += parts;
      report.bytes += bytes;
      options.onBatch?.({ sessionId: session.id, kind: 'pruned', rows: parts, bytes });
      if (parts < batchSize) break;
    }
    if (hasWork(report)) reports.push(report);
  }
  return reports;
}
