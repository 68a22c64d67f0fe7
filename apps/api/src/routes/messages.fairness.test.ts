import { describe, expect, it } from 'vitest';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';

const api = useTestApi();
const strict = useTestApi({ server: { sessionWriteQueueLimit: 1 } });

const batch = (prefix: string, size: number) =>
  Array.from({ length: size }, (_, i) => ({
    id: `${prefix}-${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `message ${i} of ${prefix} `.repeat(20) }],
  }));

async function createSession(target: typeof api, id: string, key?: string) {
  const response = await target.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: 'gpt-4o' } },
    ...(key ? { key } : {}),
  });
  expect(response.statusCode).toBe(201);
}

describe('concurrent writes to one session', () => {
  it('wait in the process, not on a pooled connection: no backend waits on the session lock, other tenants are served', async () => {
    await createSession(api, 'hammered');
    await createSession(api, 'neighbour', TENANT_B_KEY);
    const pool = api.database.database.pool;
    let lockWaits = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const result = await pool.query(
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'`,
        );
        lockWaits = Math.max(lockWaits, result.rows[0].n as number);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const appends = Array.from({ length: 12 }, (_, k) =>
      api.request({
        method: 'POST',
        url: '/v1/sessions/hammered/messages',
        payload: { messages: batch(`b${k}`, 300) },
      }),
    );
    // Another tenant's read while the session is hammered.
    const neighbour = await api.request({ method: 'GET', url: '/v1/sessions/neighbour', key: TENANT_B_KEY });
    const responses = await Promise.all(appends);
    sampling = false;
    await sampler;

    expect(neighbour.statusCode).toBe(200);
    expect(responses.map((r) => r.statusCode)).toEqual(Array(12).fill(201));
    expect(lockWaits).toBe(0);
    // Every batch landed whole, in one gap-free run of seqs.
    const seqs = responses.flatMap((r) => (r.json().messages as Array<{ seq: number }>).map((m) => m.seq));
    expect(seqs.sort((a, b) => a - b)).toEqual(Array.from({ length: 3600 }, (_, i) => i + 1));
  });

  it('past the queue limit, answers 429 with Retry-After and writes nothing of the refused batch', async () => {
    await createSession(strict, 'busy');
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, k) =>
        strict.request({
          method: 'POST',
          url: '/v1/sessions/busy/messages',
          payload: { messages: batch(`q${k}`, 200) },
        }),
      ),
    );
    const refused = responses.filter((r) => r.statusCode === 429);
    const accepted = responses.filter((r) => r.statusCode === 201);
    expect(refused.length).toBeGreaterThan(0);
    expect(accepted.length + refused.length).toBe(6);
    for (const response of refused) {
      expect(response.headers['retry-after']).toBe('1');
      expect(response.json().error.code).toBe('too_many_requests');
    }
    const stored = await strict.database.database.pool.query(
      "select count(*)::int as n from messages m join sessions s on s.pk = m.session_pk where s.id = 'busy'",
    );
    expect(stored.rows[0].n).toBe(accepted.length * 200);
  });
});
