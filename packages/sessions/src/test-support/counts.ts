/**
 * What a test reads back from the tables to show that a refused operation wrote nothing, by
 * the ids clients use.
 */
import type { Db } from '@compactor/db';

async function count(db: Db, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.$client.query<{ n: string }>(sql, params);
  return Number(rows[0]?.n ?? 0);
}

export const countSessionsOf = (db: Db, tenantId: string, id: string) =>
  count(db, 'select count(*) as n from sessions where tenant_id = $1 and id = $2', [tenantId, id]);

/** The ids of the session's messages, in order. */
export async function messageIdsOf(db: Db, sessionPk: number): Promise<string[]> {
  const { rows } = await db.$client.query<{ id: string }>(
    'select id from messages where session_pk = $1 order by seq',
    [sessionPk],
  );
  return rows.map((row) => row.id);
}

export const countCompactionsOf = (db: Db, sessionPk: number) =>
  count(db, 'select count(*) as n from compactions where session_pk = $1', [sessionPk]);
