/**
 * `TENANT_MAX_EVENT_STREAMS` over real HTTP: a tenant's stream past the cap is a 429 with
 * Retry-After, counted in metrics, and every way a stream ends gives its place back — the
 * client leaving, the session deleted, the server closing, and the requests that never became
 * a stream (404, 503, a client gone while Redis confirmed the subscription).
 */
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import type { Gauge, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getTokenizer } from '@compactor/tokenizer';
import { createAuthenticator } from '../http/auth';
import { createApiMetrics } from '../http/metrics';
import type { ApiResources } from '../resources';
import { buildServer } from '../server';
import { createTestReplica, TENANT_A_KEY, TENANT_B_KEY, TEST_KEYS, useTestApi } from '../test-support/api';
import { openStream } from '../test-support/event-stream';
import { newSession } from '../test-support/helpers';

const api = useTestApi();
let redis: Redis;
const servers: Array<{ app: FastifyInstance; close(): Promise<void> }> = [];

beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  for (const server of servers) await server.close();
  redis.disconnect();
});

/** An API process with at most `maxEventStreams` streams per tenant, listening, with its own metrics. */
async function startServer(
  maxEventStreams: number,
  events?: (real: ApiResources['events']) => ApiResources['events'],
): Promise<{ app: FastifyInstance; url: string; metrics: Registry }> {
  const replica = createTestReplica(api.database.db, api.queuePrefix);
  const metrics = createApiMetrics();
  const app = await buildServer(
    {
      db: api.database.db,
      redis,
      auth: createAuthenticator(api.database.db, TEST_KEYS),
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock: () => new Date(),
      jobs: replica.jobs,
      events: events ? events(replica.events) : replica.events,
    },
    { tenantLimits: { maxEventStreams }, metrics, sseKeepaliveMs: 100 },
  );
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  servers.push({
    app,
    async close() {
      app.server.closeAllConnections();
      await app.close().catch(() => undefined);
      await replica.close();
    },
  });
  return { app, url, metrics };
}

/** Streams the process holds open, as its metrics report them. */
async function openStreams(metrics: Registry): Promise<number> {
  const gauge = metrics.getSingleMetric('compactor_api_event_streams') as Gauge;
  return (await gauge.get()).values[0]?.value ?? 0;
}

async function rejections(metrics: Registry): Promise<number> {
  const counter = metrics.getSingleMetric('compactor_tenant_limit_rejections_total')!;
  const values = (await counter.get()).values as Array<{ labels: { limit?: string }; value: number }>;
  return values.find((v) => v.labels.limit === 'event_streams')?.value ?? 0;
}

const get = (url: string, session: string, key = TENANT_A_KEY) =>
  fetch(`${url}/v1/sessions/${session}/events`, { headers: { authorization: `Bearer ${key}` } });

describe('TENANT_MAX_EVENT_STREAMS', () => {
  it('refuses a tenant’s stream past the cap with 429 and Retry-After, not another tenant’s', async () => {
    await newSession(api, 'lim-a');
    await api.request({
      method: 'POST',
      url: '/v1/sessions',
      key: TENANT_B_KEY,
      payload: { id: 'lim-b', model: { id: 'gpt-4o' } },
    });
    const { url, metrics } = await startServer(2);
    const held = [await openStream(url, 'lim-a'), await openStream(url, 'lim-a')];
    for (const stream of held) await stream.until((text) => text.startsWith(': connected'));

    const refused = await get(url, 'lim-a');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({
      error: { code: 'too_many_requests', details: { limit: 'event_streams', retryAfterSeconds: 5 } },
    });
    expect(await rejections(metrics)).toBe(1);

    const other = await openStream(url, 'lim-b', TENANT_B_KEY);
    expect(other.status).toBe(200);
    expect(await openStreams(metrics)).toBe(3);
    for (const stream of [...held, other]) stream.close();
    await expect.poll(() => openStreams(metrics), { timeout: 5000 }).toBe(0);
  });

  it('gives the place back when the client leaves, the session is deleted, or the server closes', async () => {
    await newSession(api, 'lim-ends');
    const { app, url, metrics } = await startServer(1);

    // The client leaves: the next stream is accepted.
    const first = await openStream(url, 'lim-ends');
    await first.until((text) => text.startsWith(': connected'));
    expect((await get(url, 'lim-ends')).status).toBe(429);
    first.close();
    await expect.poll(() => openStreams(metrics), { timeout: 5000 }).toBe(0);

    // The session is deleted: its stream ends with session.deleted and frees the place.
    const second = await openStream(url, 'lim-ends');
    await second.until((text) => text.startsWith(': connected'));
    expect((await api.request({ method: 'DELETE', url: '/v1/sessions/lim-ends' })).statusCode).toBe(204);
    await second.ended();
    await expect.poll(() => openStreams(metrics), { timeout: 5000 }).toBe(0);

    // The server closes: shutdown ends the streams and frees their places.
    await newSession(api, 'lim-ends');
    const third = await openStream(url, 'lim-ends');
    await third.until((text) => text.startsWith(': connected'));
    expect(await openStreams(metrics)).toBe(1);
    await app.close();
    await third.ended();
    expect(await openStreams(metrics)).toBe(0);
  });

  it('gives the place back for requests that never became a stream: 404, 503, a client gone while subscribing', async () => {
    await newSession(api, 'lim-fails');
    let failSubscribe = false;
    let holdSubscribe: Promise<void> | null = null;
    const { url, metrics } = await startServer(1, (real) => ({
      ...real,
      subscribe: async (sessionPk, listener) => {
        if (failSubscribe) throw new Error('ECONNREFUSED');
        if (holdSubscribe) await holdSubscribe;
        return real.subscribe(sessionPk, listener);
      },
    }));

    for (let i = 0; i < 3; i++) expect((await get(url, 'lim-missing')).status).toBe(404);
    failSubscribe = true;
    for (let i = 0; i < 3; i++) expect((await get(url, 'lim-fails')).status).toBe(503);
    failSubscribe = false;
    expect(await openStreams(metrics)).toBe(0);

    // The client leaves while Redis has not confirmed the subscription yet.
    let confirm = () => {};
    holdSubscribe = new Promise<void>((resolve) => (confirm = resolve));
    const leaving = new AbortController();
    const request = fetch(`${url}/v1/sessions/lim-fails/events`, {
      headers: { authorization: `Bearer ${TENANT_A_KEY}` },
      signal: leaving.signal,
    }).catch(() => null);
    await expect.poll(() => openStreams(metrics), { timeout: 5000 }).toBe(1);
    leaving.abort();
    await request;
    holdSubscribe = null;
    confirm();
    await expect.poll(() => openStreams(metrics), { timeout: 5000 }).toBe(0);

    const stream = await openStream(url, 'lim-fails');
    expect(stream.status).toBe(200);
    stream.close();
    await expect.poll(() => openStreams(metrics), { timeout: 5000 }).toBe(0);
    expect(await rejections(metrics)).toBe(0);
  });
});
