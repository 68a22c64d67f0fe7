/**
 * A write answered 503 can still commit: an append sent to a frozen Postgres is refused (the
 * database breaker gives up on the server), but its statement is already in the server's socket
 * buffer, and the server commits it when it thaws. A client that retries must not store it twice:
 * with the same message ids (what the clients assign when the caller gives none) or with the same
 * `Idempotency-Key` and no ids, the retry is a re-post. The server is this file's own
 * (`startPrivatePostgres`), really SIGSTOPped; the shared test server is never touched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createDatabase, ensureDatabase, migrateDatabase, type Database } from '@compactor/db';
import { startPrivatePostgres, type PrivatePostgres } from '@compactor/testing';
import { TENANT_A_KEY } from '../test-support/api';
import { buildServerOn, type ServerOn } from '../test-support/server-on';

let server: PrivatePostgres;
let database: Database;
let observer: Database;
let served: ServerOn | undefined;
let app: FastifyInstance;

beforeAll(async () => {
  server = await startPrivatePostgres();
  const url = server.url.replace(/\/postgres$/, '/compactor');
  await ensureDatabase(url);
  await migrateDatabase(url);
  // Short timeouts: whatever gives up first (the breaker, or a timeout), the append is a 503.
  database = createDatabase(url, {
    max: 3,
    connectTimeoutMs: 1_000,
    statementTimeoutMs: 2_000,
    breaker: true,
  });
  // The test's own view of what is stored, on connections opened after the thaw.
  observer = createDatabase(url, { max: 1 });
  ({ app } = served = await buildServerOn(database.db, 'outage-retry'));
});

afterAll(async () => {
  server?.resume();
  await served?.close();
  await database?.close();
  await observer?.close();
  await server?.close();
});

const SESSION = 'held-commit';

const append = (messages: unknown[], key?: string) =>
  app.inject({
    method: 'POST',
    url: `/v1/sessions/${SESSION}/messages`,
    headers: {
      authorization: `Bearer ${TENANT_A_KEY}`,
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    payload: { messages },
  });

const turn = (text: string, id?: string) => ({
  ...(id === undefined ? {} : { id }),
  role: 'user',
  parts: [{ type: 'text', text }],
});

async function storedIds(): Promise<string[]> {
  const { rows } = await observer.pool.query<{ id: string }>(
    'select m.id from messages m join sessions s on s.pk = m.session_pk where s.id = $1 order by m.seq',
    [SESSION],
  );
  return rows.map((row) => row.id);
}

/** Sends `messages` to the frozen server: a 503; after the thaw, what it held is committed. */
async function appendThroughAFreeze(messages: unknown[], key?: string): Promise<string[]> {
  const before = await storedIds();
  server.freeze();
  try {
    const refused = await append(messages, key);
    expect(refused.statusCode, refused.body).toBe(503);
    expect(refused.json()).toMatchObject({ error: { code: 'service_unavailable' } });
  } finally {
    server.resume();
  }
  await expect
    .poll(async () => (await storedIds()).length, { timeout: 15_000 })
    .toBe(before.length + messages.length);
  return (await storedIds()).slice(before.length);
}

/** The retry once the API serves again (its breaker closes within a few probes of the thaw). */
async function retryUntilServed(messages: unknown[], key?: string) {
  let answer = await append(messages, key);
  const deadline = Date.now() + 15_000;
  while (answer.statusCode === 503 && Date.now() < deadline) answer = await append(messages, key);
  return answer;
}

describe('an append answered 503 whose COMMIT the frozen server held', () => {
  it('serves before the freeze (the session known, so an append is one statement)', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: { authorization: `Bearer ${TENANT_A_KEY}` },
      payload: { id: SESSION, model: { id: 'gpt-4o' } },
    });
    expect(created.statusCode).toBe(201);
    expect((await append([turn('before', 'm0')])).statusCode).toBe(201);
  });

  it('is stored once when retried with the same message ids', async () => {
    const batch = [turn('with ids 1', 'm1'), turn('with ids 2', 'm2')];
    expect(await appendThroughAFreeze(batch)).toEqual(['m1', 'm2']);
    const retry = await retryUntilServed(batch);
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.json().messages.map((m: { created: boolean }) => m.created)).toEqual([false, false]);
    expect(await storedIds()).toEqual(['m0', 'm1', 'm2']);
  });

  it('is stored once when retried with the same Idempotency-Key and no ids', async () => {
    const batch = [turn('keyed 1'), turn('keyed 2')];
    const committed = await appendThroughAFreeze(batch, 'append-after-freeze');
    const retry = await retryUntilServed(batch, 'append-after-freeze');
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.json().messages).toEqual([
      { id: committed[0], seq: 4, created: false },
      { id: committed[1], seq: 5, created: false },
    ]);
    expect(await storedIds()).toEqual(['m0', 'm1', 'm2', ...committed]);
  });
});
