/**
 * `TENANT_SESSION_CREATE_RATE` (3 a minute here, on a clock the test moves): new sessions past
 * the rate are 429s with Retry-After that write nothing; a request that creates nothing spends
 * nothing and the same id again is never refused; tenants do not share a bucket.
 */
import type { Counter } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createApiMetrics } from '../http/metrics';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';

let now = Date.parse('2030-01-01T00:00:00Z');
const metrics = createApiMetrics();
const api = useTestApi({
  clock: () => new Date(now),
  server: { tenantLimits: { sessionCreatesPerMinute: 3 }, metrics },
});

const create = (id: string, key?: string, model: unknown = { id: 'gpt-4o' }) =>
  api.request({ method: 'POST', url: '/v1/sessions', payload: { id, model }, ...(key ? { key } : {}) });

async function rejections(): Promise<number> {
  const counter = metrics.getSingleMetric('compactor_tenant_limit_rejections_total') as Counter;
  const values = (await counter.get()).values;
  return values.find((v) => v.labels.limit === 'session_create_rate')?.value ?? 0;
}

describe('TENANT_SESSION_CREATE_RATE', () => {
  it('refuses new sessions past the rate, never what creates nothing, and refills over the minute', async () => {
    expect((await create('rate-1')).statusCode).toBe(201);
    expect((await create('rate-2')).statusCode).toBe(201);
    // The same session again, and a refused body, create nothing: they spend nothing.
    expect((await create('rate-1')).statusCode).toBe(200);
    expect((await create('rate-1', undefined, { id: 'gpt-4o', contextWindow: 10 })).statusCode).toBe(400);
    expect((await create('rate-3')).statusCode).toBe(201);

    const before = await api.counts();
    const refused = await create('rate-4');
    expect(refused.statusCode).toBe(429);
    // One token every 20 s at 3 a minute.
    expect(refused.headers['retry-after']).toBe('20');
    expect(refused.json()).toMatchObject({
      error: { code: 'too_many_requests', details: { limit: 'session_create_rate', retryAfterSeconds: 20 } },
    });
    expect(await api.counts()).toEqual(before);
    expect(await rejections()).toBe(1);

    // With the bucket empty, a session that exists is still answered (200, or 409 for another body).
    expect((await create('rate-2')).statusCode).toBe(200);
    expect((await create('rate-2', undefined, { id: 'gpt-4o-mini' })).statusCode).toBe(409);

    // Another tenant has its own bucket.
    expect((await create('rate-b', TENANT_B_KEY)).statusCode).toBe(201);

    now += 15_000;
    const soon = await create('rate-4');
    expect(soon.statusCode).toBe(429);
    expect(soon.headers['retry-after']).toBe('5');
    now += 5_000;
    expect((await create('rate-4')).statusCode).toBe(201);
    expect((await create('rate-5')).statusCode).toBe(429);
    expect(await rejections()).toBe(3);
  });
});
