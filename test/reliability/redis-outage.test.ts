import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTcpProxy, type TcpProxy } from '@compactor/testing';
import {
  sharedRedisUrl,
  startApiProcess,
  useReliabilityRig,
  waitForTerminal,
  type ApiProcess,
} from './harness';

/**
 * Redis frozen (it stops answering, sockets stay open) or stopped (connections reset, new ones
 * refused) under a running API process and a worker process. The API answers within seconds:
 * appends and compaction requests are acknowledged (Postgres holds them and their outbox
 * entries), reads of the context need no Redis, readiness stays 200 and reports Redis down (it
 * gates on Postgres only), and what does need Redis (the event stream) is a 503 — never a hang. Once Redis answers again the same worker, never restarted,
 * completes every compaction acknowledged during the outage. The outage is a TCP proxy in front
 * of the shared Redis, which itself is never touched.
 */
const API_KEY = 'redis-outage-key';
let proxy: TcpProxy;
let proxyUrl = '';
let api: ApiProcess;

const rig = useReliabilityRig({
  label: 'rel-redis-outage',
  // Read at spawn: the worker reaches Redis through the proxy, the requester does not need it.
  workerEnv: {
    get REDIS_URL() {
      return proxyUrl;
    },
    WORKER_CONCURRENCY: '2',
  },
});

beforeAll(async () => {
  const shared = new URL(sharedRedisUrl());
  proxy = await startTcpProxy({ host: shared.hostname, port: Number(shared.port || 6379) });
  proxyUrl = `redis://127.0.0.1:${proxy.port}`;
  api = await startApiProcess({
    DATABASE_URL: rig.database.url,
    REDIS_URL: proxyUrl,
    QUEUE_PREFIX: rig.prefix,
    API_KEYS: `tenant-r:${API_KEY}`,
    LOG_LEVEL: 'warn',
  });
});

afterAll(async () => {
  api?.child.kill('SIGKILL');
  await proxy?.resume();
  await proxy?.close();
});

const call = (path: string, init: RequestInit = {}) =>
  fetch(`${api.url}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    signal: AbortSignal.timeout(20_000),
  });

/** The answer's status and how long it took, in ms. */
async function timed(
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; ms: number; retryAfter: string | null; body: string }> {
  const started = performance.now();
  const response = await call(path, init);
  const body = await response.text();
  return {
    status: response.status,
    ms: performance.now() - started,
    retryAfter: response.headers.get('retry-after'),
    body,
  };
}

/** A session with a few turns, long enough that a compaction keeping 100 tokens has work to do. */
async function sessionWithTurns(id: string): Promise<void> {
  const created = await call('/v1/sessions', {
    method: 'POST',
    body: JSON.stringify({ id, model: { id: 'gpt-4o', provider: 'openai' } }),
  });
  expect(created.status).toBe(201);
  const messages = Array.from({ length: 8 }, (_, i) => ({
    id: `${id}-m${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `turn ${i}: ${'notes about the exporter and its tests '.repeat(30)}` }],
  }));
  const appended = await call(`/v1/sessions/${id}/messages`, {
    method: 'POST',
    body: JSON.stringify({ messages }),
  });
  expect(appended.status).toBe(201);
}

/** What the API answers while Redis is out; returns the compaction it acknowledged. */
async function duringOutage(id: string): Promise<string> {
  // Within a few seconds, whatever Redis does: enqueueing is bounded, probes and subscriptions too.
  const WITHIN_MS = 6_000;
  const append = await timed(`/v1/sessions/${id}/messages`, {
    method: 'POST',
    body: JSON.stringify({
      messages: [{ id: `${id}-late`, role: 'user', parts: [{ type: 'text', text: 'and?' }] }],
    }),
  });
  expect(append.status).toBe(201);
  expect(append.ms).toBeLessThan(WITHIN_MS);

  const started = performance.now();
  const requested = await call(`/v1/sessions/${id}/compactions`, {
    method: 'POST',
    body: JSON.stringify({ keepRecentTokens: 100 }),
  });
  expect(requested.status).toBe(202);
  expect(performance.now() - started).toBeLessThan(WITHIN_MS);
  const { id: compactionId } = (await requested.json()) as { id: string };

  const context = await timed(`/v1/sessions/${id}/context`);
  expect(context.status).toBe(200);
  expect(context.ms).toBeLessThan(WITHIN_MS);

  // Ready all the same: this replica serves appends and reads, so it stays behind the Service.
  const ready = await timed('/readyz');
  expect(ready.status).toBe(200);
  const readiness = JSON.parse(ready.body) as { status: string; checks: Record<string, string> };
  expect(readiness).toMatchObject({ status: 'ok', checks: { postgres: 'ok' } });
  expect(['unreachable', 'not answering']).toContain(readiness.checks.redis);
  expect(ready.ms).toBeLessThan(WITHIN_MS);

  const events = await timed(`/v1/sessions/${id}/events`);
  expect(events.status).toBe(503);
  expect(events.retryAfter).toBe('2');
  expect(events.ms).toBeLessThan(WITHIN_MS);

  // Scrapes still answer (without queue depths), and the worker's readiness says it is cut off.
  const metrics = await timed('/metrics');
  expect(metrics.status).toBe(200);
  expect(metrics.ms).toBeLessThan(WITHIN_MS);
  const worker = `http://127.0.0.1:${rig.fleet.all[0]!.port}`;
  for (const [path, status] of [
    ['/metrics', 200],
    ['/readyz', 503],
  ] as const) {
    const started = performance.now();
    const response = await fetch(`${worker}${path}`, { signal: AbortSignal.timeout(20_000) });
    expect(response.status, `worker ${path}`).toBe(status);
    expect(performance.now() - started).toBeLessThan(WITHIN_MS);
  }
  console.info(
    `redis ${id}: append ${append.ms.toFixed(0)} ms, context ${context.ms.toFixed(0)} ms, ` +
      `readyz ${ready.ms.toFixed(0)} ms, events ${events.ms.toFixed(0)} ms, metrics ${metrics.ms.toFixed(0)} ms`,
  );
  return compactionId;
}

/** Redis is back: the same worker completes the compaction acknowledged during the outage. */
async function afterOutage(id: string, compactionId: string): Promise<void> {
  const [row] = await waitForTerminal(rig.database.db, [compactionId], 60_000);
  expect(row!.status).toBe('completed');
  const history = await call(`/v1/sessions/${id}/messages?limit=100`);
  const { messages } = (await history.json()) as { messages: Array<{ id: string }> };
  expect(messages.map((m) => m.id)).toContain(`${id}-late`);
  expect(rig.fleet.all).toHaveLength(1);
  expect(rig.fleet.diedOnTheirOwn).toEqual([]);
  // The API's own connections reconnect on their schedule (backoff), independently of the worker's.
  const deadline = Date.now() + 15_000;
  const redisAnswers = async () => {
    const ready = await call('/readyz');
    return (
      ready.status === 200 && ((await ready.json()) as { checks: { redis: string } }).checks.redis === 'ok'
    );
  };
  while (!(await redisAnswers())) {
    expect(Date.now(), 'the API reports Redis up again').toBeLessThan(deadline);
    await sleep(200);
  }
}

describe('Redis out under a running API and worker', () => {
  it('frozen: acknowledged within seconds, 503 where Redis is needed, completed once it answers', async () => {
    await rig.fleet.spawn();
    await sessionWithTurns('frozen');
    proxy.freeze();
    const compactionId = await duringOutage('frozen');
    await sleep(1_000);
    await proxy.resume();
    await afterOutage('frozen', compactionId);
  }, 120_000);

  it('stopped: the same, and the worker reconnects without a restart', async () => {
    await sessionWithTurns('stopped');
    await proxy.stop();
    const compactionId = await duringOutage('stopped');
    await sleep(1_000);
    await proxy.resume();
    await afterOutage('stopped', compactionId);
  }, 120_000);
});
