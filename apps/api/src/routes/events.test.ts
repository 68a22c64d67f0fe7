/**
 * `GET /v1/sessions/:id/events` over real HTTP: two API replicas on one database and one Redis
 * prefix; the client listens on replica B, the compaction starts (and workers publish) through
 * replica A.
 */
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SessionEventMap } from '@compactor/contract';
import { compareEventIds, eventChannel } from '@compactor/queue';
import { getTokenizer } from '@compactor/tokenizer';
import { createAuthenticator } from '../http/auth';
import { buildServer } from '../server';
import {
  createTestReplica,
  TENANT_A_KEY,
  TENANT_B_KEY,
  TEST_KEYS,
  useTestApi,
  type TestReplica,
} from '../test-support/api';
import { openStream } from '../test-support/event-stream';

const a = useTestApi();

interface Replica {
  app: FastifyInstance;
  replica: TestReplica;
  url: string;
}
const replicas: Replica[] = [];
let b: Replica;
let redis: Redis;

/** Another API process: its own server, connections and subscriber, on A's database and prefix. */
async function startReplica(keepaliveMs?: number): Promise<Replica> {
  const replica = createTestReplica(a.database.db, a.queuePrefix);
  const app = await buildServer(
    {
      db: a.database.db,
      redis,
      auth: createAuthenticator(a.database.db, TEST_KEYS),
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock: () => new Date(),
      jobs: replica.jobs,
      events: replica.events,
    },
    keepaliveMs ? { sseKeepaliveMs: keepaliveMs } : {},
  );
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const started = { app, replica, url };
  replicas.push(started);
  return started;
}

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
  b = await startReplica(100);
});

afterAll(async () => {
  // fetch (undici) may hold a spare keep-alive connection that never carried a request; it
  // would hold each server's close() for undici's 4 s idle timeout.
  a.app.server.closeAllConnections();
  for (const { app, replica } of replicas) {
    app.server.closeAllConnections();
    await app.close().catch(() => undefined);
    await replica.close();
  }
  redis.disconnect();
});

/** The `data:` JSON of each `event: <type>` block in a stream's text. */
function eventsOf(text: string, type: string): Record<string, unknown>[] {
  return blocksOf(text)
    .filter((block) => block.event === type)
    .map((block) => JSON.parse(block.data) as Record<string, unknown>);
}

/** Every event block of a stream's text: its `id:`, `event:` and `data:`. */
function blocksOf(text: string): Array<{ id: string | null; event: string; data: string }> {
  return text.split('\n\n').flatMap((block) => {
    const field = (name: string) =>
      block
        .split('\n')
        .find((line) => line.startsWith(`${name}: `))
        ?.slice(name.length + 2) ?? null;
    const event = field('event');
    return event === null ? [] : [{ id: field('id'), event, data: field('data') ?? '' }];
  });
}

async function newSession(id: string) {
  const response = await a.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: 'gpt-4o' } },
  });
  expect(response.statusCode).toBe(201);
  const { rows } = await a.database.database.pool.query('select pk from sessions where id = $1', [id]);
  return Number(rows[0].pk);
}

async function subscribers(sessionPk: number): Promise<number> {
  const [, count] = (await redis.pubsub('NUMSUB', eventChannel(a.queuePrefix, sessionPk))) as [
    string,
    number,
  ];
  return count;
}

/** A `compaction.completed` payload as workers publish it. */
const completed = {
  tokensBefore: 120_000,
  tokensAfter: 30_000,
  messagesBefore: 80,
  messagesAfter: 12,
  boundarySeq: 70,
  fallback: null,
  cache: { invalidatedTokens: 0, rewriteCostUsd: null, savingPerTurnUsd: null, breakEvenTurns: null },
};

describe('GET /v1/sessions/:id/events', () => {
  it('replays what a client missed while away (Last-Event-ID), then goes on live, none twice', async () => {
    const pk = await newSession('ev-replay');
    const publish = (compactionId: string) =>
      a.publisher.publish({
        type: 'compaction.step',
        sessionPk: pk,
        sessionId: 'ev-replay',
        compactionId,
        at: new Date().toISOString(),
        data: { step: 'summarize', attempt: 1 },
      });
    const compactionsIn = (text: string) =>
      blocksOf(text).map((block) => JSON.parse(block.data).compactionId);

    const first = await openStream(b.url, 'ev-replay');
    await first.until((text) => text.startsWith(': connected\n\n'));
    await publish('cmp_1');
    const seen = blocksOf(await first.until((text) => text.includes('cmp_1')));
    const lastId = seen.at(-1)!.id!;
    expect(lastId).toMatch(/^\d+-\d+$/);
    first.close();
    await expect.poll(() => subscribers(pk), { timeout: 5000 }).toBe(0);

    // Published while nobody listens.
    await publish('cmp_2');
    await publish('cmp_3');

    const again = await openStream(b.url, 'ev-replay', TENANT_A_KEY, { 'last-event-id': lastId });
    await again.until((text) => text.includes('cmp_3'));
    await publish('cmp_4');
    const text = await again.until((t) => t.includes('cmp_4'));
    again.close();
    expect(compactionsIn(text)).toEqual(['cmp_2', 'cmp_3', 'cmp_4']);
    const ids = blocksOf(text).map((block) => block.id!);
    expect([...ids].sort(compareEventIds)).toEqual(ids);
    expect(compareEventIds(ids[0]!, lastId)).toBeGreaterThan(0);

    // No Last-Event-ID, or one that is not ours: live events only.
    for (const headers of [{}, { 'last-event-id': 'garbage' }] as Array<Record<string, string>>) {
      const fresh = await openStream(b.url, 'ev-replay', TENANT_A_KEY, headers);
      await fresh.until((t) => t.startsWith(': connected\n\n'));
      await publish('cmp_5');
      const live = await fresh.until((t) => t.includes('cmp_5'));
      fresh.close();
      expect(compactionsIn(live)).toEqual(['cmp_5']);
    }
  });

  it('delivers events started on replica A to a client on replica B', async () => {
    const pk = await newSession('ev-two');
    await newSession('ev-other');
    const stream = await openStream(b.url, 'ev-two');
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers.get('cache-control')).toContain('no-cache');
    await stream.until((text) => text.startsWith(': connected\n\n'));

    // A compaction requested through A's HTTP API.
    const started = await a.request({ method: 'POST', url: '/v1/sessions/ev-two/compactions', payload: {} });
    expect(started.statusCode).toBe(202);
    const compactionId = started.json().id;
    const afterRequest = await stream.until((text) => text.includes('event: compaction.requested\n'));
    expect(eventsOf(afterRequest, 'compaction.requested')).toEqual([
      {
        type: 'compaction.requested',
        sessionId: 'ev-two',
        compactionId,
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        data: { reason: 'manual', strategy: 'summarize' },
      },
    ]);

    // What a worker publishes on A's side, and another session's event that must not show up.
    await a.publisher.publish({
      type: 'compaction.completed',
      sessionPk: pk + 1_000_000,
      sessionId: 'ev-other',
      compactionId: 'cmp_other',
      at: new Date().toISOString(),
      data: completed,
    });
    await a.publisher.publish({
      type: 'compaction.completed',
      sessionPk: pk,
      sessionId: 'ev-two',
      compactionId,
      at: '2026-01-01T00:00:00.000Z',
      data: completed,
    });
    const text = await stream.until((t) => t.includes('event: compaction.completed\n'));
    expect(eventsOf(text, 'compaction.completed')).toEqual([
      {
        type: 'compaction.completed',
        sessionId: 'ev-two',
        compactionId,
        at: '2026-01-01T00:00:00.000Z',
        data: completed,
      },
    ]);
    expect(text).not.toContain('cmp_other');
    expect(text).not.toContain('sessionPk');

    // Disconnecting unsubscribes the channel.
    expect(await subscribers(pk)).toBe(1);
    stream.close();
    await expect.poll(() => subscribers(pk), { timeout: 5000 }).toBe(0);
  });

  it('sends a keepalive comment while nothing happens', async () => {
    await newSession('ev-idle');
    const stream = await openStream(b.url, 'ev-idle');
    await stream.until((text) => text.includes(': keepalive\n\n'), 2000);
    stream.close();
  });

  it('gives every listener of a session each event, on any replica', async () => {
    const pk = await newSession('ev-many');
    const onB = await openStream(b.url, 'ev-many');
    const alsoOnB = await openStream(b.url, 'ev-many');
    const onA = await a.app.listen({ port: 0, host: '127.0.0.1' }).then((url) => openStream(url, 'ev-many'));
    for (const stream of [onB, alsoOnB, onA]) await stream.until((text) => text.startsWith(': connected'));
    await b.replica.publisher.publish({
      type: 'prune.completed',
      sessionPk: pk,
      sessionId: 'ev-many',
      compactionId: null,
      at: new Date().toISOString(),
      data: { jobId: 'prune-1', parts: 2, tokens: 30_000, cache: completed.cache },
    });
    for (const stream of [onB, alsoOnB, onA]) {
      const text = await stream.until((t) => t.includes('event: prune.completed\n'));
      expect(eventsOf(text, 'prune.completed')[0]).toMatchObject({
        compactionId: null,
        data: { parts: 2 },
      });
    }
    onB.close();
    // The other listener on B keeps the channel.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await subscribers(pk)).toBe(2);
    alsoOnB.close();
    onA.close();
    await expect.poll(() => subscribers(pk), { timeout: 5000 }).toBe(0);
  });

  it('cuts off a client that stops reading, instead of buffering for it without end', async () => {
    const pk = await newSession('ev-slow');
    const { port } = new URL(b.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(
      `GET /v1/sessions/ev-slow/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TENANT_A_KEY}\r\n\r\n`,
    );
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.pause(); // reads nothing more
    const blob = 'x'.repeat(64 * 1024);
    try {
      // Well past the socket buffers and the 1 MiB the server keeps for a client.
      for (let i = 0; i < 400 && (await subscribers(pk)) > 0; i++) {
        await a.publisher.publish({
          type: 'compaction.step',
          sessionPk: pk,
          sessionId: 'ev-slow',
          compactionId: 'cmp_slow',
          at: new Date().toISOString(),
          // No producer sends this: a payload large enough to fill the socket buffers fast.
          data: { blob } as unknown as SessionEventMap['compaction.step'],
        });
      }
      await expect.poll(() => subscribers(pk), { timeout: 5000 }).toBe(0);
    } finally {
      socket.destroy();
    }
  });

  it('ends every stream of a deleted session, on every replica, with session.deleted', async () => {
    const pk = await newSession('ev-deleted');
    const c = await startReplica();
    const streams = [
      await openStream(b.url, 'ev-deleted'),
      await openStream(b.url, 'ev-deleted'),
      await openStream(c.url, 'ev-deleted'),
    ];
    for (const stream of streams) await stream.until((text) => text.startsWith(': connected'));
    expect(await subscribers(pk)).toBe(2);

    // Deleted through replica A, where no stream is open.
    expect((await a.request({ method: 'DELETE', url: '/v1/sessions/ev-deleted' })).statusCode).toBe(204);
    for (const stream of streams) {
      await stream.ended();
      const text = await stream.until(() => true);
      const blocks = blocksOf(text);
      expect(blocks.at(-1)?.event).toBe('session.deleted');
      expect(JSON.parse(blocks.at(-1)!.data)).toEqual({
        type: 'session.deleted',
        sessionId: 'ev-deleted',
        compactionId: null,
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        data: {},
      });
      expect(text.endsWith(`${blocks.at(-1)!.data}\n\n`)).toBe(true);
    }
    await expect.poll(() => subscribers(pk), { timeout: 5000 }).toBe(0);
    const again = await fetch(`${b.url}/v1/sessions/ev-deleted/events`, {
      headers: { authorization: `Bearer ${TENANT_A_KEY}` },
    });
    expect(again.status).toBe(404);
  });

  it('answers 404, not a silent stream, when the delete lands while the subscription is confirmed', async () => {
    const pk = await newSession('ev-delete-race');
    const replica = createTestReplica(a.database.db, a.queuePrefix);
    const app = await buildServer({
      db: a.database.db,
      redis,
      auth: createAuthenticator(a.database.db, TEST_KEYS),
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock: () => new Date(),
      jobs: replica.jobs,
      events: {
        ...replica.events,
        // The session is deleted (and its event published) after the route found it and before
        // Redis confirmed this subscription: the event reached nobody here.
        subscribe: async (sessionPk, listener) => {
          await a.request({ method: 'DELETE', url: '/v1/sessions/ev-delete-race' });
          return replica.events.subscribe(sessionPk, listener);
        },
      },
    });
    try {
      const response = await app.inject({
        method: 'GET',
        url: '/v1/sessions/ev-delete-race/events',
        headers: { authorization: `Bearer ${TENANT_A_KEY}` },
      });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('not_found');
      await expect.poll(() => subscribers(pk), { timeout: 5000 }).toBe(0);
    } finally {
      await app.close();
      await replica.close();
    }
  });

  it('answers 404 (JSON) for another tenant’s session and for a missing one, 401 without a key', async () => {
    await newSession('ev-private');
    for (const [session, key, status] of [
      ['ev-private', TENANT_B_KEY, 404],
      ['ev-missing', TENANT_A_KEY, 404],
      ['ev-private', 'no-such-key', 401],
    ] as const) {
      const response = await fetch(`${b.url}/v1/sessions/${session}/events`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toContain('application/json');
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
        status === 404 ? 'not_found' : 'unauthorized',
      );
    }
  });

  it('ends open streams when the server closes, so shutdown is not held up', async () => {
    await newSession('ev-close');
    const c = await startReplica();
    const stream = await openStream(c.url, 'ev-close');
    await stream.until((text) => text.startsWith(': connected'));
    const closing = Date.now();
    await c.app.close();
    await stream.ended(3000);
    expect(Date.now() - closing).toBeLessThan(3000);
  });

  it('answers 503 when Redis cannot take the subscription, and documents the stream', async () => {
    await newSession('ev-down');
    const replica = createTestReplica(a.database.db, a.queuePrefix);
    const app = await buildServer({
      db: a.database.db,
      redis,
      auth: createAuthenticator(a.database.db, TEST_KEYS),
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock: () => new Date(),
      jobs: replica.jobs,
      events: {
        subscribe: () => Promise.reject(new Error('ECONNREFUSED')),
        since: async () => [],
        close: async () => undefined,
      },
    });
    try {
      const response = await app.inject({
        method: 'GET',
        url: '/v1/sessions/ev-down/events',
        headers: { authorization: `Bearer ${TENANT_A_KEY}` },
      });
      expect(response.statusCode).toBe(503);
      expect(response.json().error.code).toBe('service_unavailable');
      const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
      expect(spec.paths['/v1/sessions/{id}/events'].get.tags).toEqual(['events']);
      expect(Object.keys(spec.paths)).toEqual(
        expect.arrayContaining([
          '/v1/sessions/{id}/compactions',
          '/v1/sessions/{id}/prune',
          '/v1/sessions/{id}/overflow',
          '/v1/compactions/{id}',
        ]),
      );
    } finally {
      await app.close();
      await replica.close();
    }
  });
});
