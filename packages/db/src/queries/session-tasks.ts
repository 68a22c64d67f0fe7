/**
 * The session's task registry (migration 0025, core tasks/). Every statement is a bounded range
 * of one session's index entries: the block's read takes at most 501 running and 21 finished
 * rows, a page at most 501, whatever the session's history or other tenants' rows.
 */
import { sql } from 'drizzle-orm';
import type { Message, TaskRecord, ToolPart } from '@compactor/core';
import { TASKS_BLOCK_MAX_FINISHED, TASKS_BLOCK_MAX_TASKS } from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';

/** A registry row: the core record plus where its late result was delivered. */
export interface SessionTaskRow extends TaskRecord {
  deliveredSeq: number | null;
}

const iso = (value: unknown): string =>
  (value instanceof Date ? value : new Date(String(value))).toISOString();

function taskOf(row: Record<string, unknown>): SessionTaskRow {
  return {
    callId: String(row.call_id),
    tool: String(row.tool),
    status: row.status as TaskRecord['status'],
    asked: String(row.asked),
    dedupeKey: String(row.dedupe_key),
    messageId: String(row.message_id),
    seq: Number(row.seq),
    startedAt: iso(row.started_at),
    finishedAt: row.finished_at === null ? null : iso(row.finished_at),
    outcome: row.outcome === null ? null : String(row.outcome),
    deliveredSeq: row.delivered_seq === null ? null : Number(row.delivered_seq),
  };
}

const COLUMNS = sql.raw(
  'call_id, tool, status, asked, dedupe_key, message_id, seq, started_at, finished_at, outcome, delivered_seq',
);

/**
 * Records task calls as appended or patched (one statement, arrays unnested: its text does not
 * grow with the batch). A call already recorded moves forward only: a finished task stays
 * finished, and an older message's call with a recurring id does not replace a newer one's.
 * Returns the call ids it inserted or changed (a re-post changes none).
 */
export async function upsertSessionTasks(
  db: DbOrTx,
  session: { pk: number; tenantId: string },
  records: readonly TaskRecord[],
): Promise<Set<string>> {
  if (records.length === 0) return new Set();
  const { rows } = await executePrepared<{ call_id: string }>(db, upsertSessionTasksSql(session, records));
  return new Set(rows.map((r) => r.call_id));
}

/** Marks a task finished (or running) as a PATCH reported it; `deliveredSeq` when a late result was delivered. */
export async function finishSessionTask(
  db: DbOrTx,
  sessionPk: number,
  change: {
    callId: string;
    status: TaskRecord['status'];
    outcome: string | null;
    at: string;
    deliveredSeq?: number | null;
  },
): Promise<void> {
  const finished = change.status === 'completed' || change.status === 'error';
  await executePrepared(
    db,
    sql`
    update session_tasks set status = ${change.status}, outcome = ${change.outcome},
      finished_at = case when ${finished} then coalesce(finished_at, ${change.at}::timestamptz) else finished_at end,
      delivered_seq = coalesce(${change.deliveredSeq ?? null}::int, delivered_seq)
    where session_pk = ${sessionPk} and call_id = ${change.callId} and status in ('pending', 'running')`,
  );
}

/**
 * What the tasks block renders: the running tasks oldest first (one more than the block lists,
 * so it knows there are more) and the newest finished ones, plus how many tasks each side holds
 * in all. Two index range scans and two bounded counts of the running side.
 */
export async function selectTasksForBlock(
  db: DbOrTx,
  sessionPk: number,
): Promise<{ tasks: SessionTaskRow[]; running: number; finished: number }> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`
    (select ${COLUMNS}, 0 as side from session_tasks
      where session_pk = ${sessionPk} and status in ('pending', 'running')
      order by started_at, call_id limit ${TASKS_BLOCK_MAX_TASKS + 1})
    union all
    (select ${COLUMNS}, 1 as side from session_tasks
      where session_pk = ${sessionPk} and status in ('completed', 'error')
      order by finished_at desc, call_id limit ${TASKS_BLOCK_MAX_FINISHED + 1})`,
  );
  const tasks = rows.map(taskOf);
  const running = tasks.filter((t) => t.status === 'pending' || t.status === 'running').length;
  return { tasks, running, finished: tasks.length - running };
}

/** The running tasks past the block's first 501, counted (at most 100,000 index entries). */
export async function countRunningTasks(db: DbOrTx, sessionPk: number): Promise<number> {
  const { rows } = await executePrepared<{ n: string }>(
    db,
    sql`select count(*) as n from (select 1 from session_tasks
      where session_pk = ${sessionPk} and status in ('pending', 'running') limit 100000) r`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Where a page of tasks ends: the last task's seq and call id. */
export interface TaskCursor {
  seq: number;
  callId: string;
}

/** A page of the session's tasks, newest call first, after `after` (keyset on seq, call id). */
export async function listSessionTasks(
  db: DbOrTx,
  sessionPk: number,
  page: { after: TaskCursor | null; limit: number },
): Promise<{ tasks: SessionTaskRow[]; next: TaskCursor | null }> {
  const limit = Math.max(1, Math.min(500, page.limit));
  const seq = page.after?.seq ?? 2147483647;
  const callId = page.after?.callId ?? '';
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`
    select ${COLUMNS} from session_tasks
    where session_pk = ${sessionPk} and seq <= ${seq}::int
      and (seq < ${seq}::int or call_id > ${callId}::text)
    order by seq desc, call_id limit ${limit + 1}`,
  );
  const tasks = rows.slice(0, limit).map(taskOf);
  const last = tasks.at(-1);
  return { tasks, next: rows.length > limit && last ? { seq: last.seq, callId: last.callId } : null };
}

/** One task by call id, or null. */
export async function findSessionTask(
  db: DbOrTx,
  sessionPk: number,
  callId: string,
): Promise<SessionTaskRow | null> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`select ${COLUMNS} from session_tasks where session_pk = ${sessionPk} and call_id = ${callId}`,
  );
  return rows[0] ? taskOf(rows[0]) : null;
}

/**
 * The task calls among the tool parts of seqs `fromSeq`..`toSeq` (an append's batch, read back
 * when the batch was serialised off the event loop): parts whose tool, as compared (lower case,
 * no `_ . : -`), is one of `toolNames`, or whose message lists them in `metadata.taskCallIds`.
 * A range of `parts_session_seq_idx` the batch's size, joined to messages only for the task
 * calls it finds (a batch of 70,000 other calls costs the scan and no join), plus the batch's
 * messages that mark calls; token counts are not read (0).
 */
export async function selectAppendedTaskCalls(
  db: DbOrTx,
  sessionPk: number,
  range: { fromSeq: number; toSeq: number; toolNames: string[] },
): Promise<Array<Pick<Message, 'id' | 'seq' | 'role' | 'parts' | 'metadata'>>> {
  const { rows } = await executePrepared<Record<string, unknown>>(db, appendedTaskCallsSql(sessionPk, range));
  const byMessage = new Map<string, Pick<Message, 'id' | 'seq' | 'role' | 'parts' | 'metadata'>>();
  for (const row of rows) {
    const id = String(row.message_id);
    const message = byMessage.get(id) ?? {
      id,
      seq: Number(row.seq),
      role: 'assistant' as const,
      parts: [],
      metadata: (row.metadata ?? {}) as Record<string, unknown>,
    };
    const part: ToolPart = {
      type: 'tool',
      callId: String(row.call_id),
      tool: String(row.tool),
      status: row.tool_status as ToolPart['status'],
      input: row.tool_input,
      output: (row.tool_output as string | null) ?? null,
      error: (row.tool_error as string | null) ?? null,
      compactedAt: null,
      tokens: 0,
      outputTokens: 0,
    };
    message.parts.push(part);
    byMessage.set(id, message);
  }
  return [...byMessage.values()];
}

/** Records the seq of the message that delivered a task's late result. */
export async function markTaskDelivered(
  db: DbOrTx,
  sessionPk: number,
  delivery: { callId: string; seq: number },
): Promise<void> {
  await executePrepared(
    db,
    sql`update session_tasks set delivered_seq = ${delivery.seq}::int
      where session_pk = ${sessionPk} and call_id = ${delivery.callId}`,
  );
}

/** {@link upsertSessionTasks}' statement (the plan capture explains the same text). */
export function upsertSessionTasksSql(
  session: { pk: number; tenantId: string },
  records: readonly TaskRecord[],
) {
  const col = <K extends keyof TaskRecord>(key: K) => sql.param(records.map((r) => r[key]));
  return sql`
    insert into session_tasks as t
      (session_pk, tenant_id, call_id, tool, status, asked, dedupe_key, message_id, seq, started_at, finished_at, outcome)
    select ${session.pk}, ${session.tenantId}, u.call_id, u.tool, u.status, u.asked, u.dedupe_key, u.message_id,
      u.seq, u.started_at, u.finished_at, u.outcome
    from unnest(${col('callId')}::text[], ${col('tool')}::text[], ${col('status')}::text[], ${col('asked')}::text[],
      ${col('dedupeKey')}::text[], ${col('messageId')}::text[], ${col('seq')}::int[], ${col('startedAt')}::timestamptz[],
      ${col('finishedAt')}::timestamptz[], ${col('outcome')}::text[])
      as u(call_id, tool, status, asked, dedupe_key, message_id, seq, started_at, finished_at, outcome)
    on conflict (session_pk, call_id) do update set
      status = excluded.status, outcome = excluded.outcome,
      finished_at = coalesce(t.finished_at, excluded.finished_at),
      tool = excluded.tool, asked = excluded.asked, dedupe_key = excluded.dedupe_key,
      message_id = excluded.message_id, seq = excluded.seq,
      started_at = case when excluded.seq = t.seq then t.started_at else excluded.started_at end
    where excluded.seq > t.seq
      or (excluded.seq = t.seq and t.status in ('pending', 'running') and excluded.status <> t.status)
    returning t.call_id`;
}

/** {@link selectAppendedTaskCalls}' statement (the plan capture explains the same text). */
export function appendedTaskCallsSql(
  sessionPk: number,
  range: { fromSeq: number; toSeq: number; toolNames: string[] },
) {
  return sql`
    select * from (
      select m.id as message_id, m.seq, m.metadata, p.idx, p.call_id, p.tool, p.tool_status, p.tool_input,
        p.tool_output, p.tool_error
      from parts p join messages m on m.pk = p.message_pk
      where p.session_pk = ${sessionPk} and p.seq between ${range.fromSeq}::int and ${range.toSeq}::int
        and p.type = 'tool' and lower(translate(p.tool, '_.:-', '')) = any(${sql.param(range.toolNames)}::text[])
      union all
      select m.id, m.seq, m.metadata, p.idx, p.call_id, p.tool, p.tool_status, p.tool_input, p.tool_output, p.tool_error
      from messages m join parts p on p.message_pk = m.pk
      where m.session_pk = ${sessionPk} and m.seq between ${range.fromSeq}::int and ${range.toSeq}::int
        and m.role = 'assistant' and m.metadata ? 'taskCallIds' and p.type = 'tool'
        and m.metadata->'taskCallIds' ? p.call_id
        and lower(translate(p.tool, '_.:-', '')) <> all(${sql.param(range.toolNames)}::text[])
    ) calls
    order by seq, idx`;
}
