import { expect } from 'vitest';
import type { TestApi } from './api';

/** Creates a session (gpt-4o unless `extra.model` says otherwise) and expects a 201. */
export async function newSession(
  api: TestApi,
  id: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const response = await api.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: 'gpt-4o' }, ...extra },
  });
  expect(response.statusCode, response.body).toBe(201);
}

/** The internal key of a session (event channels and job payloads use it). */
export async function sessionPk(api: TestApi, id: string): Promise<number> {
  const { rows } = await api.database.database.pool.query('select pk from sessions where id = $1', [id]);
  return Number(rows[0].pk);
}

/** A session's compaction rows, straight from the table. */
export async function compactionsOf(
  api: TestApi,
  session: string,
): Promise<{ id: string; reason: string; status: string }[]> {
  const { rows } = await api.database.database.pool.query(
    `select c.id, c.reason, c.status from compactions c join sessions s on s.pk = c.session_pk
     where s.id = $1 order by c.requested_at`,
    [session],
  );
  return rows;
}
