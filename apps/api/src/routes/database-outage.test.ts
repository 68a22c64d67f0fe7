/**
 * Postgres stopped or frozen under a running API: every request is answered `503
 * service_unavailable` with Retry-After within the configured timeouts — never a 500, never a
 * hang — and once Postgres is back the same process serves again, and a retried append (same
 * message ids) is stored once. The server is one of this file's own (`startPrivatePostgres`),
 * really shut down and really SIGSTOPped; the shared test server is never touched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, ensureDatabase, migrateDatabase, type Database } from '@compactor/db';
import { startPrivatePostgres, type PrivatePostgres } from '@compactor/testing';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../http/error-handler';
import { buildServerOn, type ServerOn } from '../test-support/server-on';

let server: PrivatePostgres;
let url: string;
let database: Database;
let served: ServerOn | undefined;

/** Connect and statement timeouts short enough for a test: an answer within about 3 s. */
const CONNECT_TIMEOUT_MS = 500;
const STATEMENT_TIMEOUT_MS = 1_000;

beforeAll(async () => {
  server = await startPrivatePostgres();
  url = server.url.replace(/\/postgres$/, '/compactor');
  await ensureDatabase(url);
  await migrateDatabase(url);
  database = createDatabase(url, {
    max: 3,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
  });
  served = await buildServerOn(database.db, 'outage');
});

afterAll(async () => {
  server?.resume();
  await served?.close();
  await database?.close();
  await server?.close();
});

const request = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  served!.request(method, url, payload);

const append = (id: string) =>
  request('POST', '/v1/sessions/outage/messages', {
    messages: [{ id, role: 'user', parts: [{ type: 'text', text: `message ${id}` }] }],
  });

/** The answer and how long it took. */
async function timed<T>(work: () => Promise<T>): Promise<{ answer: T; ms: number }> {
  const started = performance.now();
  const answer = await work();
  return { answer, ms: performance.now() - started };
}

async function storedIds(): Promise<string[]> {
  const { rows } = await database.pool.query<{ id: string }>(
    "select m.id from messages m join sessions s on s.pk = m.session_pk where s.id = 'outage' order by m.seq",
  );
  return rows.map((r) => r.id);
}

describe('Postgres unavailable', () => {
  it('serves before the outage', async () => {
    expect(
      (await request('POST', '/v1/sessions', { id: 'outage', model: { id: 'gpt-4o' } })).statusCode,
    ).toBe(201);
    expect((await append('m1')).statusCode).toBe(201);
  });

  it('frozen: 503 with Retry-After within the timeouts, for reads and writes; a retried append lands once', async () => {
    server.freeze();
    for (const work of [() => append('m2'), () => request('GET', '/v1/sessions/outage/context')]) {
      const { answer, ms } = await timed(work);
      expect(answer.statusCode).toBe(503);
      expect(answer.json()).toMatchObject({ error: { code: 'service_unavailable' } });
      expect(answer.headers['retry-after']).toBe(String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      // The statement timeout and the client's margin, not the kernel's minutes.
      expect(ms).toBeLessThan(STATEMENT_TIMEOUT_MS + 2_000 + 2_000);
    }
    server.resume();
    // The client retries the append with the same ids: stored once, whatever reached Postgres.
    await expect.poll(async () => (await append('m2')).statusCode, { timeout: 10_000 }).toBeLessThan(300);
    expect(await storedIds()).toEqual(['m1', 'm2']);
  });

  it('stopped: 503 at once; the same process serves again when it is back', async () => {
    await server.stop();
    const { answer, ms } = await timed(() => append('m3'));
    expect(answer.statusCode).toBe(503);
    expect(answer.headers['retry-after']).toBe(String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    expect(ms).toBeLessThan(CONNECT_TIMEOUT_MS + 2_000);
    await server.start();
    await expect.poll(async () => (await append('m3')).statusCode, { timeout: 10_000 }).toBeLessThan(300);
    expect((await request('GET', '/v1/sessions/outage/context')).statusCode).toBe(200);
    expect(await storedIds()).toEqual(['m1', 'm2', 'm3']);
  });
});
