/**
 * A frozen Postgres under a running API with the database breaker on (as main.ts opens its
 * pool): under a steady trickle of reads and appends, every request is answered `503
 * service_unavailable` with Retry-After long before its statement timeout could have fired, and
 * `/readyz` says the breaker is open; once Postgres answers again the same process serves again
 * within a few probe intervals, without a restart. The freeze is a TCP proxy in front of this
 * file's own database (`startTcpProxy`: nothing passes in either direction, sockets stay open,
 * as with a SIGSTOPped server; `stop()`: connections reset and refused, as a stopped server), so
 * the shared server is never touched.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createDatabase, type Database } from '@compactor/db';
import { useTestDatabase } from '@compactor/db/testing';
import { startTcpProxy, type TcpProxy } from '@compactor/testing';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../http/error-handler';
import { createApiMetrics } from '../http/metrics';
import { buildServerOn, type ServerOn } from '../test-support/server-on';

/** Long, as in production: without the breaker every request on the frozen server waits it out. */
const STATEMENT_TIMEOUT_MS = 15_000;
/** How often the trickle sends a read and an append. */
const TRICKLE_INTERVAL_MS = 100;

const testDatabase = useTestDatabase();
let proxy: TcpProxy;
let database: Database;
let served: ServerOn | undefined;
let app: FastifyInstance;

beforeAll(async () => {
  const direct = new URL(testDatabase.url);
  proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const proxied = new URL(testDatabase.url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  database = createDatabase(proxied.toString(), {
    max: 5,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    breaker: true,
    tenantShares: true,
  });
  ({ app } = served = await buildServerOn(database.db, 'breaker', {
    metrics: createApiMetrics({ databaseBreakerOpen: () => database.breaker?.isOpen === true }),
  }));
});

afterAll(async () => {
  await proxy?.resume();
  await served?.close();
  await database?.close();
  await proxy?.close();
});

const request = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  served!.request(method, url, payload);

let nextMessage = 0;
const append = () => {
  const id = `m${nextMessage++}`;
  return request('POST', '/v1/sessions/breaker/messages', {
    messages: [{ id, role: 'user', parts: [{ type: 'text', text: `message ${id}` }] }],
  });
};
const read = () => request('GET', '/v1/sessions/breaker');

interface Answered {
  sentAt: number;
  answeredAt: number;
  answer: LightMyRequestResponse;
}

/** A read and an append every {@link TRICKLE_INTERVAL_MS} until stopped; every answer kept. */
function trickle() {
  const answers: Answered[] = [];
  const inFlight = new Set<Promise<void>>();
  let running = true;
  const send = (work: () => Promise<LightMyRequestResponse>) => {
    const sentAt = performance.now();
    const done = work().then((answer) => {
      answers.push({ sentAt, answeredAt: performance.now(), answer });
    });
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  };
  const loop = (async () => {
    while (running) {
      send(read);
      send(append);
      await sleep(TRICKLE_INTERVAL_MS);
    }
  })();
  return {
    answers,
    /** Stops sending and waits for every answer. */
    async stop() {
      running = false;
      await loop;
      await Promise.all([...inFlight]);
      return answers;
    },
  };
}

/** `compactor_api_database_breaker_open` as `/metrics` serves it. */
const breakerGauge = async () => {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith('compactor_api_database_breaker_open '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
};

const readiness = async () =>
  (await app.inject({ method: 'GET', url: '/readyz' })).json<{
    checks: { postgres: string };
  }>().checks.postgres;

describe('the database breaker', () => {
  it('answers every request 503 soon after a freeze, and serves again soon after the thaw', async () => {
    expect(
      (await request('POST', '/v1/sessions', { id: 'breaker', model: { id: 'gpt-4o' } })).statusCode,
    ).toBe(201);
    const before = trickle();
    await sleep(500);
    expect((await before.stop()).every(({ answer }) => answer.statusCode < 300)).toBe(true);

    const during = trickle();
    const frozenAt = performance.now();
    proxy.freeze();
    // The breaker opens on its own probes, not after a statement timeout.
    await expect
      .poll(readiness, { timeout: STATEMENT_TIMEOUT_MS - 2_000, interval: 100 })
      .toBe('breaker open');
    await sleep(1_000);
    const answers = await during.stop();

    // Every request sent after the freeze, or still waiting at it, was refused with a retry hint,
    // and well before its statement could have timed out: none waited for the server.
    const affected = answers.filter(({ answeredAt }) => answeredAt > frozenAt);
    expect(affected.length).toBeGreaterThan(10);
    for (const { sentAt, answeredAt, answer } of affected) {
      expect(answer.statusCode).toBe(503);
      expect(answer.json()).toMatchObject({ error: { code: 'service_unavailable' } });
      expect(answer.headers['retry-after']).toBe(String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      expect(answeredAt - Math.max(sentAt, frozenAt)).toBeLessThan(STATEMENT_TIMEOUT_MS / 2);
    }
    // Once open, a request is refused without waiting for anything.
    const refused = await read();
    expect(refused.statusCode).toBe(503);
    expect(await breakerGauge()).toBe(1);

    await proxy.resume();
    // Back without a restart, a few probe intervals later.
    await expect.poll(async () => (await read()).statusCode, { timeout: 5_000, interval: 50 }).toBe(200);
    expect(await readiness()).toBe('ok');
    expect(await breakerGauge()).toBe(0);
    const after = trickle();
    await sleep(500);
    expect((await after.stop()).every(({ answer }) => answer.statusCode < 300)).toBe(true);
  });

  it('opens on a refused connection too, and closes when the server takes connections again', async () => {
    await proxy.stop();
    // Connections reset and refused: the first requests fail at once, and the breaker opens.
    await expect.poll(readiness, { timeout: 10_000, interval: 100 }).toBe('breaker open');
    const refused = await append();
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe(String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    await proxy.resume();
    await expect.poll(async () => (await append()).statusCode, { timeout: 5_000, interval: 50 }).toBe(201);
    expect(await readiness()).toBe('ok');
  });
});
