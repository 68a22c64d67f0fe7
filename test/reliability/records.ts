/** Reading the system of record: compaction rows and stored summary messages. */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { Db } from '@compactor/db';

export type CompactionState = {
  id: string;
  session_pk: string;
  status: string;
  step: string | null;
  attempts: number;
  fence: number;
  error_code: string | null;
  boundary_seq: number | null;
  covers_through_seq: number | null;
  summary_message_ids: string[];
  /** Epoch milliseconds (drizzle hands raw timestamps over as strings). */
  finished_ms: number | null;
  details: Record<string, unknown>;
};

/** Compaction rows (all, or these), ordered by id. */
export async function compactionStates(db: Db, ids?: string[]): Promise<CompactionState[]> {
  const result = await db.execute<CompactionState>(sql`
    select id, session_pk, status, step, attempts, fence, error_code, boundary_seq, covers_through_seq,
           summary_message_ids, (extract(epoch from finished_at) * 1000)::float8 as finished_ms, details
    from compactions
    ${ids ? sql`where id = any(${sql.param(ids)}::text[])` : sql``}
    order by id
  `);
  return result.rows;
}

export const TERMINAL = new Set(['completed', 'failed', 'skipped']);

/** Polls until every compaction is terminal; returns their rows in the order of `ids`. Fails with what is still open. */
export async function waitForTerminal(db: Db, ids: string[], timeoutMs: number): Promise<CompactionState[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await compactionStates(db, ids);
    const open = rows.filter((r) => !TERMINAL.has(r.status));
    if (open.length === 0 && rows.length === ids.length) {
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id) => byId.get(id)!);
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${open.length} of ${ids.length} compactions still active after ${timeoutMs} ms: ` +
          open
            .slice(0, 10)
            .map((r) => `${r.id} ${r.status}/${r.step ?? '-'} attempts=${r.attempts}`)
            .join(', '),
      );
    }
    await sleep(100);
  }
}

/** Summary messages stored per compaction (`compaction_id = id and summary`). */
export async function summaryMessageCounts(
  db: Db,
): Promise<Map<string, { total: number; summaryText: number }>> {
  const result = await db.execute<{ compaction_id: string; total: string; summary_text: string }>(sql`
    select compaction_id, count(*) as total,
           count(*) filter (where metadata->>'type' = 'compaction_summary') as summary_text
    from messages where summary and compaction_id is not null group by compaction_id
  `);
  return new Map(
    result.rows.map((r) => [
      r.compaction_id,
      { total: Number(r.total), summaryText: Number(r.summary_text) },
    ]),
  );
}
