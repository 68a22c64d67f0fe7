/**
 * `TENANT_MAX_ACTIVE_COMPACTIONS` (2 here) against real Postgres and Redis: manual and overflow
 * requests past it are 429s with Retry-After that write nothing, a request that joins its
 * session's active compaction is never refused, racing requests cannot pass it together, and an
 * auto compaction past it waits its turn — the append succeeds and the compaction is deferred in
 * Postgres (the queue package's tests start it when the tenant has room).
 */
import type { Counter } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import { createApiMetrics } from '../http/metrics';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';
import { findDeferredCompaction } from '@compactor/db';
import { compactionsOf, newSession, sessionPk } from '../test-support/helpers';

const metrics = createApiMetrics();
const api = useTestApi({ server: { tenantLimits: { maxActiveCompactions: 2 }, metrics } });

const compact = (session: string, headers: Record<string, string> = {}, key?: string) =>
  api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/compactions`,
    payload: {},
    headers,
    ...(key ? { key } : {}),
  });

/** Ends every active compaction, as workers would: each test starts with the tenant's places free. */
async function finishActive(): Promise<void> {
  await api.database.database.pool.query(
    `update compactions set status = 'failed', finished_at = now() where status in ('pending', 'running')`,
  );
}

async function counted(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = metrics.getSingleMetric(name) as Counter;
  const values = (await metric.get()).values;
  return values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
}

beforeEach(finishActive);

describe('TENANT_MAX_ACTIVE_COMPACTIONS', () => {
  it('refuses a manual compaction past the cap with 429 and Retry-After, writing nothing', async () => {
    for (const id of ['cap-1', 'cap-2', 'cap-3']) await newSession(api, id);
    const first = await compact('cap-1', { 'idempotency-key': 'k1' });
    expect(first.statusCode).toBe(202);
    expect((await compact('cap-2')).statusCode).toBe(202);

    const before = await api.counts();
    const rejectedBefore = await counted('compactor_tenant_limit_rejections_total', {
      limit: 'active_compactions',
    });
    const refused = await compact('cap-3');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.json()).toMatchObject({
      error: { code: 'too_many_requests', details: { limit: 'active_compactions', retryAfterSeconds: 10 } },
    });
    expect(await api.counts()).toEqual(before);
    expect(await compactionsOf(api, 'cap-3')).toEqual([]);
    expect(await counted('compactor_tenant_limit_rejections_total', { limit: 'active_compactions' })).toBe(
      rejectedBefore + 1,
    );

    // Joining a session's active compaction adds none: never refused, with or without its key.
    const joined = await compact('cap-1');
    expect(joined.statusCode).toBe(200);
    expect(joined.json().id).toBe(first.json().id);
    const repeated = await compact('cap-1', { 'idempotency-key': 'k1' });
    expect(repeated.statusCode).toBe(200);
    expect(repeated.json().id).toBe(first.json().id);

    // Another tenant has its own places.
    await api.request({
      method: 'POST',
      url: '/v1/sessions',
      key: TENANT_B_KEY,
      payload: { id: 'cap-b', model: { id: 'gpt-4o' } },
    });
    expect((await compact('cap-b', {}, TENANT_B_KEY)).statusCode).toBe(202);

    // A compaction that ends frees its place.
    await api.database.database.pool.query(
      `update compactions set status = 'completed', finished_at = now() where id = $1`,
      [first.json().id],
    );
    expect((await compact('cap-3')).statusCode).toBe(202);
  });

  it('lets racing requests of one tenant through only up to the cap', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `cap-race-${i}`);
    for (const id of ids) await newSession(api, id);
    const answers = await Promise.all(ids.map((id) => compact(id)));
    const statuses = answers.map((a) => a.statusCode).sort();
    expect(statuses).toEqual([202, 202, 429, 429, 429, 429, 429, 429]);
    const { rows } = await api.database.database.pool.query(
      `select count(*)::int as active from compactions where tenant_id = 'tenant-a' and status in ('pending', 'running')`,
    );
    expect(rows[0].active).toBe(2);
  });

  it('refuses an overflow that would start a compaction past the cap; a report that is no overflow is answered', async () => {
    for (const id of ['cap-o1', 'cap-o2', 'cap-o3']) await newSession(api, id);
    expect((await compact('cap-o1')).statusCode).toBe(202);
    expect((await compact('cap-o2')).statusCode).toBe(202);
    const overflow = { error: 'This model maximum context length is 128000 tokens', status: 400 };
    const refused = await api.request({
      method: 'POST',
      url: '/v1/sessions/cap-o3/overflow',
      payload: overflow,
    });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    expect(await compactionsOf(api, 'cap-o3')).toEqual([]);

    const fine = await api.request({
      method: 'POST',
      url: '/v1/sessions/cap-o3/overflow',
      payload: { error: 'rate limited, slow down', status: 429 },
    });
    expect(fine.statusCode).toBe(200);
    expect(fine.json()).toMatchObject({ overflow: false, compaction: null });

    // The session's own active compaction is joined, at the cap or not.
    const joined = await api.request({
      method: 'POST',
      url: '/v1/sessions/cap-o1/overflow',
      payload: overflow,
    });
    expect(joined.statusCode).toBe(200);
    expect(joined.json()).toMatchObject({ overflow: true, compaction: { reason: 'manual' } });
  });

  it('defers an auto compaction past the cap: the append succeeds, and the compaction waits its turn', async () => {
    const tiny = { id: 'tiny-model', contextWindow: 8_000, maxOutputTokens: 1_000 };
    for (const id of ['cap-m1', 'cap-m2']) await newSession(api, id);
    await newSession(api, 'cap-auto', { model: tiny });
    expect((await compact('cap-m1')).statusCode).toBe(202);
    expect((await compact('cap-m2')).statusCode).toBe(202);
    const deferredBefore = await counted('compactor_auto_compactions_deferred_total');

    const question = { role: 'user', parts: [{ type: 'text', text: 'next?' }] };
    const turn = (input: number) => ({
      role: 'assistant',
      parts: [{ type: 'text', text: 'done' }],
      finish: 'stop',
      usage: { input, output: 10 },
    });
    const post = (messages: unknown[]) =>
      api.request({ method: 'POST', url: '/v1/sessions/cap-auto/messages', payload: { messages } });

    // The history the report measures is stored: a report adds at most 1,750 (a quarter of the
    // usable 7,000) over the stored count.
    const history = { role: 'user', parts: [{ type: 'text', text: ' word'.repeat(6_000) }] };
    const held = await post([history, question, turn(7_500)]);
    expect(held.statusCode).toBe(201);
    expect(held.json().compaction).toBeNull();
    expect(held.json().status).toMatchObject({ overflow: true, activeCompaction: null });
    expect(await compactionsOf(api, 'cap-auto')).toEqual([]);
    expect(await counted('compactor_auto_compactions_deferred_total')).toBe(deferredBefore + 1);
    const pk = await sessionPk(api, 'cap-auto');
    const waiting = await findDeferredCompaction(api.database.db, pk);
    expect(waiting).toMatchObject({ reason: 'auto', maxActive: 2 });

    // Asking again while it waits keeps its place in the line.
    expect((await post([question, turn(7_550)])).json().compaction).toBeNull();
    expect(await findDeferredCompaction(api.database.db, pk)).toEqual(waiting);

    // With room again, the next append starts it itself (the entry is then dropped, not started).
    await finishActive();
    const started = await post([question, turn(7_600)]);
    expect(started.statusCode).toBe(201);
    expect(started.json().compaction).toMatchObject({ status: 'pending', reason: 'auto' });
    expect(started.json().status.activeCompaction).toMatchObject({ reason: 'auto' });
  });
});
