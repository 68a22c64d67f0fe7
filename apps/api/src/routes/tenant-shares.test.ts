/**
 * Tenants take turns at the API's pool (opened as main.ts opens it, with `tenantShares`, here
 * with 2 connections): tenant A's appends hold both connections (their sessions' rows are locked
 * by another connection, so each waits in Postgres) and queue a backlog behind them; tenant B's
 * one request, sent after that backlog, is served before most of it. Order, not time: which
 * requests completed before B's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createDatabase, type Database } from '@compactor/db';
import { useTestDatabase } from '@compactor/db/testing';
import { TENANT_A_KEY, TENANT_B_KEY } from '../test-support/api';
import { buildServerOn, type ServerOn } from '../test-support/server-on';

const POOL_SIZE = 2;
const A_REQUESTS = 12;

const testDatabase = useTestDatabase();
let database: Database;
let served: ServerOn;
/** Checkouts asked for and not yet given a connection, wherever they wait. */
let waitingCheckouts = 0;

beforeAll(async () => {
  database = createDatabase(testDatabase.url, { max: POOL_SIZE, breaker: true, tenantShares: true });
  const connect = database.pool.connect.bind(database.pool) as (...args: unknown[]) => unknown;
  (database.pool as { connect: unknown }).connect = (...args: unknown[]) => {
    waitingCheckouts++;
    const settle = <T>(value: T) => {
      waitingCheckouts--;
      return value;
    };
    if (typeof args[0] === 'function') {
      const callback = args[0] as (...result: unknown[]) => void;
      return connect((...result: unknown[]) => callback(...settle(result)));
    }
    return (connect() as Promise<unknown>).then(settle, (error: unknown) => {
      settle(undefined);
      throw error;
    });
  };
  served = await buildServerOn(database.db, 'tenant-shares');
});

afterAll(async () => {
  await served?.close();
  await database?.close();
});

const request = (key: string, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  served.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}` },
    ...(payload ? { payload } : {}),
  });

const appendTo = (key: string, session: string, id: string) =>
  request(key, 'POST', `/v1/sessions/${session}/messages`, {
    messages: [{ id, role: 'user', parts: [{ type: 'text', text: `message ${id}` }] }],
  });

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  await expect.poll(check, { timeout: 30_000, interval: 10 }).toBe(true);
}

describe("the API's pool under one tenant's backlog", () => {
  it("serves another tenant's request before most of the backlog queued ahead of it", async () => {
    for (let s = 0; s < A_REQUESTS; s++)
      expect(
        (await request(TENANT_A_KEY, 'POST', '/v1/sessions', { id: `a${s}`, model: { id: 'gpt-4o' } }))
          .statusCode,
      ).toBe(201);
    expect(
      (await request(TENANT_B_KEY, 'POST', '/v1/sessions', { id: 'b', model: { id: 'gpt-4o' } })).statusCode,
    ).toBe(201);

    // Every session of A locked by a connection outside the pool: A's appends wait in Postgres.
    const locker = new pg.Client({ connectionString: testDatabase.url });
    await locker.connect();
    const activity = new pg.Client({ connectionString: testDatabase.url });
    await activity.connect();
    try {
      await locker.query('begin');
      await locker.query("select pk from sessions where tenant_id = 'tenant-a' for update");

      const finished: string[] = [];
      const track = (label: string, answer: ReturnType<typeof request>) =>
        answer.then((response) => {
          finished.push(label);
          return response;
        });
      const appendsOfA = Array.from({ length: A_REQUESTS }, (_, s) =>
        track('A', appendTo(TENANT_A_KEY, `a${s}`, `m${s}`)),
      );
      // Both connections held by A's appends waiting on the locks, the rest of them queued.
      await until(async () => {
        const { rows } = await activity.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return rows[0]!.n === POOL_SIZE && waitingCheckouts === A_REQUESTS - POOL_SIZE;
      });
      const appendOfB = track('B', appendTo(TENANT_B_KEY, 'b', 'm0'));
      await until(() => waitingCheckouts === A_REQUESTS - POOL_SIZE + 1);

      await locker.query('rollback');
      const answers = await Promise.all([...appendsOfA, appendOfB]);
      expect(answers.map((answer) => answer.statusCode)).toEqual(Array(A_REQUESTS + 1).fill(201));
      // First come first served, B would have waited for every one of A's appends queued before it.
      const aheadOfB = finished.indexOf('B');
      expect(aheadOfB).toBeLessThan(A_REQUESTS / 2);
    } finally {
      await locker.end();
      await activity.end();
    }
  });
});
