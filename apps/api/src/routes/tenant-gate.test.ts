/**
 * Each tenant's requests take turns (the API as main.ts builds it, with a `TenantGate` of 2 in
 * flight and 4 waiting, over a pool of 4 shared by tenant): tenant A's appends are held inside
 * Postgres (their sessions' rows locked by a connection outside the pool), and more of them wait
 * than its turns; tenant B's append is answered while every one of them is still held. Without
 * the gate A's appends take all four connections and B's waits for one of them to come back,
 * which none does until the lock goes (B's append was a 503 after the pool's wait). Also: a second
 * write to one session waits at the gate rather than in a turn, and event streams, drop-in
 * requests and large appends take no turn. Events and states, not time: what is waiting where.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createDatabase, type Database } from '@compactor/db';
import { useTestDatabase } from '@compactor/db/testing';
import { TENANT_A_KEY, TENANT_B_KEY } from '../test-support/api';
import { buildServerOn, type ServerOn } from '../test-support/server-on';
import type { Counter } from 'prom-client';
import { createApiMetrics } from '../http/metrics';
import { TenantGate } from '../http/tenant-gate';
import { LARGE_BODY_BYTES } from '../http/unparsed-body';
import { openStream } from '../test-support/event-stream';

const POOL_SIZE = 4;
const IN_FLIGHT = 2;
const QUEUED = 4;

const testDatabase = useTestDatabase();
let database: Database;
let served: ServerOn;
const gate = new TenantGate({ inFlight: IN_FLIGHT, queued: QUEUED, queuedPerLane: 8, leaseMs: 3_600_000 });
const metrics = createApiMetrics();

async function gateRejections(): Promise<number> {
  const counter = metrics.getSingleMetric('compactor_tenant_limit_rejections_total') as Counter;
  return (await counter.get()).values.find((v) => v.labels.limit === 'tenant_requests')?.value ?? 0;
}

beforeAll(async () => {
  database = createDatabase(testDatabase.url, {
    max: POOL_SIZE,
    breaker: true,
    tenantShares: true,
    // A's held statements wait on the locks for as long as a test holds them, which on a loaded
    // machine can outlast the default 15 s timeout.
    statementTimeoutMs: 0,
  });
  served = await buildServerOn(database.db, 'tenant-gate', { tenantGate: gate, metrics });
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

async function createSessions(key: string, ids: string[]): Promise<void> {
  for (const id of ids)
    expect((await request(key, 'POST', '/v1/sessions', { id, model: { id: 'gpt-4o' } })).statusCode).toBe(
      201,
    );
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  await expect.poll(check, { timeout: 30_000, interval: 10 }).toBe(true);
}

type Answer = ReturnType<typeof appendTo>;

/**
 * Runs `work` while sessions of tenant A (`only` these, or all) are row-locked by a connection
 * outside the API's pool; the requests it returns are awaited once the lock is gone.
 */
async function withTenantALocked(
  work: (lockWaits: () => Promise<number>) => Promise<Answer[]>,
  only?: string[],
): Promise<Array<Awaited<Answer>>> {
  const locker = new pg.Client({ connectionString: testDatabase.url });
  const activity = new pg.Client({ connectionString: testDatabase.url });
  await locker.connect();
  await activity.connect();
  const lockWaits = async () => {
    const { rows } = await activity.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
       where datname = current_database() and wait_event_type = 'Lock'`,
    );
    return rows[0]!.n;
  };
  let held: Answer[];
  try {
    await locker.query('begin');
    await locker.query(
      "select pk from sessions where tenant_id = 'tenant-a' and ($1::text[] is null or id = any($1)) for update",
      [only ?? null],
    );
    held = await work(lockWaits);
  } finally {
    await locker.query('rollback').catch(() => undefined);
    await locker.end();
    await activity.end();
  }
  return Promise.all(held);
}

const storedIds = async (key: string, session: string) => {
  const page = await request(key, 'GET', `/v1/sessions/${session}/messages`);
  expect(page.statusCode).toBe(200);
  return (page.json() as { messages: Array<{ id: string }> }).messages.map((message) => message.id);
};

describe('tenants taking turns at the API', () => {
  it("answers another tenant's append while the flooding tenant's admitted requests are held and more wait", async () => {
    const sessionsOfA = Array.from({ length: IN_FLIGHT + QUEUED + 1 }, (_, s) => `flood${s}`);
    await createSessions(TENANT_A_KEY, sessionsOfA);
    await createSessions(TENANT_B_KEY, ['quiet']);

    const answersOfA = await withTenantALocked(async (lockWaits) => {
      const admittable = sessionsOfA.slice(0, IN_FLIGHT + QUEUED);
      const appendsOfA = admittable.map((session) => appendTo(TENANT_A_KEY, session, 'm0'));
      // Two of A's appends inside Postgres, waiting on the locks; four waiting for their turn.
      await until(
        async () =>
          (await lockWaits()) === IN_FLIGHT &&
          gate.load('tenant-a').running === IN_FLIGHT &&
          gate.load('tenant-a').waiting === QUEUED,
      );

      // One more than A may queue: refused with when to retry, and nothing stored.
      const refused = await appendTo(TENANT_A_KEY, sessionsOfA.at(-1)!, 'm0');
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ error: { code: 'too_many_requests' } });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(await gateRejections()).toBe(1);

      // B's append is answered while A's are all still held or waiting.
      const ofB = await appendTo(TENANT_B_KEY, 'quiet', 'm0');
      expect(ofB.statusCode).toBe(201);
      expect(gate.load('tenant-a')).toEqual({ running: IN_FLIGHT, waiting: QUEUED });
      expect(await lockWaits()).toBe(IN_FLIGHT);

      return appendsOfA;
    });

    expect(answersOfA.map((answer) => answer.statusCode)).toEqual(Array(IN_FLIGHT + QUEUED).fill(201));
    expect(await storedIds(TENANT_A_KEY, sessionsOfA.at(-1)!)).toEqual([]);
    expect(await storedIds(TENANT_A_KEY, sessionsOfA[0]!)).toEqual(['m0']);
    expect(await storedIds(TENANT_B_KEY, 'quiet')).toEqual(['m0']);
  });

  it("waits a second write to one session at the gate, so a write to the tenant's other session takes the turn", async () => {
    await createSessions(TENANT_A_KEY, ['busy', 'other']);

    const answers = await withTenantALocked(async (lockWaits) => {
      const first = appendTo(TENANT_A_KEY, 'busy', 'm0');
      await until(async () => (await lockWaits()) === 1);
      const second = appendTo(TENANT_A_KEY, 'busy', 'm1');
      await until(() => gate.load('tenant-a').waiting === 1);
      // Sent last, it runs: the second write to `busy` would only wait behind the first.
      const other = appendTo(TENANT_A_KEY, 'other', 'm0');
      await until(
        async () =>
          (await lockWaits()) === 2 &&
          gate.load('tenant-a').running === IN_FLIGHT &&
          gate.load('tenant-a').waiting === 1,
      );
      return [first, second, other];
    });

    expect(answers.map((answer) => answer.statusCode)).toEqual([201, 201, 201]);
    expect(await storedIds(TENANT_A_KEY, 'busy')).toEqual(['m0', 'm1']);
    expect(gate.load('tenant-a')).toEqual({ running: 0, waiting: 0 });
  });

  it('lets an event stream, a drop-in request and a large append of the tenant through while both of its turns are held', async () => {
    await createSessions(TENANT_A_KEY, ['held0', 'held1', 'listened', 'large']);
    const url = await served.app.listen({ port: 0, host: '127.0.0.1' });

    const answers = await withTenantALocked(
      async (lockWaits) => {
        const held = ['held0', 'held1'].map((session) => appendTo(TENANT_A_KEY, session, 'm0'));
        await until(
          async () => (await lockWaits()) === IN_FLIGHT && gate.load('tenant-a').running === IN_FLIGHT,
        );

        // A stream lives as long as its client listens: it must not take one of the turns.
        const stream = await openStream(url, 'listened');
        expect(stream.status).toBe(200);
        stream.close();
        // A drop-in request waits on its upstream for seconds: it takes no turn either (here
        // none is configured, and the answer says so at once).
        const dropIn = await request(TENANT_A_KEY, 'POST', '/v1/chat/completions', {
          model: 'gpt-4o',
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(dropIn.json()).toMatchObject({ error: { code: 'upstream_not_configured' } });
        // A body of 1 MiB or more is bounded by the large-append slots, not the turns.
        const large = await request(TENANT_A_KEY, 'POST', '/v1/sessions/large/messages', {
          messages: [
            { id: 'big', role: 'user', parts: [{ type: 'text', text: 'x'.repeat(LARGE_BODY_BYTES) }] },
          ],
        });
        expect(large.statusCode).toBe(201);
        expect(gate.load('tenant-a')).toEqual({ running: IN_FLIGHT, waiting: 0 });
        expect(await lockWaits()).toBe(IN_FLIGHT);
        return held;
      },
      ['held0', 'held1'],
    );

    expect(answers.map((answer) => answer.statusCode)).toEqual([201, 201]);
    expect(await storedIds(TENANT_A_KEY, 'large')).toEqual(['big']);
  });
});
