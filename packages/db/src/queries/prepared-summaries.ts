import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import { outbox, preparedSummaries } from '../schema';
import type { OutboxRow } from './outbox';
import { rowMapper, selectList } from './raw-rows';

/** A session's prepared summary (policy `prepare`): requested, written, or given up. */
export type PreparedSummaryRow = typeof preparedSummaries.$inferSelect;

const outboxFromRow = rowMapper(outbox, '');

/**
 * The error code of a draft the reconciler retired because its job is gone (Redis lost it, or
 * BullMQ failed it after its workers died): unlike a draft its job gave up, it never ran to an
 * end, so a new one may be requested on the same boundary.
 */
export const DRAFT_JOB_LOST = 'job_lost';

/**
 * Requests a prepared summary for the session, built on `baseCompactionId` (its latest completed
 * compaction, null before the first), with the outbox entry of its job (`{ sessionPk, draftId }`)
 * in ONE statement. It fires once per crossing of the soft threshold: a request built on the
 * same compaction already exists (pending, written or given up) and nothing is written, unless
 * that draft is ready but a message before its cut changed since (it can never serve, so a new
 * one may), or the reconciler retired it because its job was lost ({@link DRAFT_JOB_LOST}). A request replaced while its job runs is fenced out by its id. Returns the outbox
 * entry to dispatch, or `null` when nothing was requested.
 */
export async function requestPreparedSummary(
  db: DbOrTx,
  request: {
    sessionPk: number;
    id: string;
    baseCompactionId: string | null;
    /** Carried to the job (`headroomTokens`): how far below its trigger the session was. */
    headroomTokens: number;
    jobName: string;
  },
): Promise<OutboxRow | null> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`
    with p as (
      insert into prepared_summaries (session_pk, id, status, base_compaction_id)
      values (${request.sessionPk}, ${request.id}, 'pending', ${request.baseCompactionId}::text)
      on conflict (session_pk) do update set
        id = excluded.id, status = 'pending', base_compaction_id = excluded.base_compaction_id,
        settings_key = null, covers_through_seq = null, cut_seq = null, changed_seq = null,
        outcome = null, model = null, usage_input = null, usage_output = null, cost_usd = null,
        error_code = null, requested_at = now(), prepared_at = null
      where prepared_summaries.base_compaction_id is distinct from excluded.base_compaction_id
         or (prepared_summaries.status = 'ready' and prepared_summaries.changed_seq < prepared_summaries.cut_seq)
         or (prepared_summaries.status = 'failed' and prepared_summaries.error_code = ${DRAFT_JOB_LOST})
      returning session_pk, id
    )
    insert into outbox (job_name, job_id, payload)
    select ${request.jobName}, p.id,
      jsonb_build_object('sessionPk', p.session_pk, 'draftId', p.id, 'headroomTokens', ${Math.max(0, Math.floor(request.headroomTokens))}::int)
    from p
    returning ${selectList(outbox, 'outbox', '')}`,
  );
  return rows[0] ? outboxFromRow(rows[0]) : null;
}

/** The session's prepared summary, whatever its status, or `null`. */
export async function findPreparedSummary(db: DbOrTx, sessionPk: number): Promise<PreparedSummaryRow | null> {
  const [row] = await db.select().from(preparedSummaries).where(eq(preparedSummaries.sessionPk, sessionPk));
  return row ?? null;
}

/**
 * The worker begins reading the view for request `id`: the change mark is cleared (a PATCH
 * committed before this sees its change in the read that follows; one after it marks the row
 * again) and the covered range fixed. `null` when the request was replaced or is not pending.
 */
export async function beginPreparedSummary(
  db: DbOrTx,
  sessionPk: number,
  id: string,
  coversThroughSeq: number,
): Promise<PreparedSummaryRow | null> {
  const [row] = await db
    .update(preparedSummaries)
    .set({ changedSeq: null, coversThroughSeq })
    .where(pendingRequest(sessionPk, id))
    .returning();
  return row ?? null;
}

/** What a written draft stores. */
export interface PreparedSummaryWrite {
  settingsKey: string;
  cutSeq: number;
  outcome: unknown;
  model: string | null;
  usageInput: number | null;
  usageOutput: number | null;
  costUsd: number | null;
  preparedAt: Date;
}

/** Stores request `id`'s draft (`ready`); false when the request was replaced meanwhile (nothing written). */
export async function savePreparedSummary(
  db: DbOrTx,
  sessionPk: number,
  id: string,
  draft: PreparedSummaryWrite,
): Promise<boolean> {
  const rows = await db
    .update(preparedSummaries)
    .set({ ...draft, status: 'ready', errorCode: null })
    .where(pendingRequest(sessionPk, id))
    .returning({ id: preparedSummaries.id });
  return rows.length > 0;
}

/**
 * Gives request `id` up (`failed` or `skipped`, with a code); a replaced or already ended request
 * is left alone. True when this call ended it.
 */
export async function endPreparedSummary(
  db: DbOrTx,
  sessionPk: number,
  id: string,
  status: 'failed' | 'skipped',
  errorCode: string,
): Promise<boolean> {
  const rows = await db
    .update(preparedSummaries)
    .set({ status, errorCode })
    .where(pendingRequest(sessionPk, id))
    .returning({ id: preparedSummaries.id });
  return rows.length > 0;
}

/**
 * Ends many requests at once as `failed` with `errorCode` (the reconciler's retirement of drafts
 * whose job is gone), each only while it is still that pending request: one whose job wrote it
 * or gave it up meanwhile, or which a newer request replaced, is left alone. One statement, one
 * commit, however many. Returns the ids it ended.
 */
export async function failPreparedSummaries(
  db: DbOrTx,
  requests: ReadonlyArray<{ sessionPk: number; id: string }>,
  errorCode: string,
): Promise<string[]> {
  if (requests.length === 0) return [];
  const { rows } = await db.execute<{ id: string }>(sql`
    update prepared_summaries p set status = 'failed', error_code = ${errorCode}
    from unnest(${sql.param(requests.map((r) => r.sessionPk))}::bigint[], ${sql.param(requests.map((r) => r.id))}::text[])
      as r(session_pk, id)
    where p.session_pk = r.session_pk and p.id = r.id and p.status = 'pending'
    returning p.id`);
  return rows.map((r) => r.id);
}

function pendingRequest(sessionPk: number, id: string) {
  return and(
    eq(preparedSummaries.sessionPk, sessionPk),
    eq(preparedSummaries.id, id),
    eq(preparedSummaries.status, 'pending'),
  );
}
