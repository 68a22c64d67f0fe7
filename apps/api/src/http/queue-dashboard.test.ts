import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { useTestDatabase } from '@compactor/testing';
import { getTokenizer } from '@compactor/tokenizer';
import { buildServer } from '../server';
import { createTestReplica, TENANT_A_KEY, TEST_KEYS, type TestReplica } from '../test-support/api';
import { createAuthenticator } from './auth';

const database = useTestDatabase();
const ADMIN_TOKEN = 'ops-token-0123456789abcdef';
let app: FastifyInstance;
let replica: TestReplica;
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
  replica = createTestReplica(database.db, `{dashboard-${Date.now()}}`);
  app = await buildServer(
    {
      db: database.db,
      redis,
      auth: createAuthenticator(database.db, TEST_KEYS),
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock: () => new Date(),
      jobs: replica.jobs,
      events: replica.events,
    },
    { queueDashboard: { queues: replica.queues, adminToken: ADMIN_TOKEN } },
  );
});

afterAll(async () => {
  await app.close();
  await replica.close();
  redis.disconnect();
});

const basic = (password: string) => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;

describe('queue dashboard (/admin/queues)', () => {
  it('asks a browser for the operator token and refuses tenant keys and wrong tokens', async () => {
    for (const authorization of [
      undefined,
      `Bearer ${TENANT_A_KEY}`,
      basic('wrong'),
      basic(`${ADMIN_TOKEN}x`),
    ]) {
      const response = await app.inject({
        method: 'GET',
        url: '/admin/queues',
        ...(authorization ? { headers: { authorization } } : {}),
      });
      expect(response.statusCode, authorization).toBe(401);
      expect(response.headers['www-authenticate']).toContain('Basic');
      expect(response.json()).toMatchObject({ error: { code: 'unauthorized' } });
    }
  });

  it('serves the board and its API on the job queues with the operator token', async () => {
    await replica.queues.enqueue('compact', 'cmp_dashboard_1', { compactionId: 'cmp_dashboard_1' });
    const page = await app.inject({
      method: 'GET',
      url: '/admin/queues',
      headers: { authorization: basic(ADMIN_TOKEN) },
    });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const queues = await app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(queues.statusCode).toBe(200);
    const names = (queues.json() as { queues: Array<{ name: string; counts: Record<string, number> }> })
      .queues;
    expect(names.map((q) => q.name).sort()).toEqual(['compact', 'prune']);
    expect(names.find((q) => q.name === 'compact')!.counts.waiting).toBe(1);
  });
});
