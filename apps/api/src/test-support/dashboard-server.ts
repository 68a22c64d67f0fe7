import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import type { TestDatabase } from '@compactor/db/testing';
import { getTokenizer } from '@compactor/tokenizer';
import { createAuthenticator } from '../http/auth';
import { buildServer, type ServerOptions } from '../server';
import { createTestReplica, TEST_KEYS, type TestReplica } from './api';

/** An API with the queue dashboard on, its replica's queues and Redis; `close` stops all three. */
export interface DashboardServer {
  app: FastifyInstance;
  replica: TestReplica;
  close(): Promise<void>;
}

/** Builds an API serving the queue dashboard behind `adminToken`, with `options` added. */
export async function buildDashboardServer(
  database: TestDatabase,
  adminToken: string,
  options: ServerOptions = {},
): Promise<DashboardServer> {
  const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
  const replica = createTestReplica(database.db, `{dashboard-${Date.now()}-${Math.random()}}`);
  const app = await buildServer(
    {
      db: database.db,
      redis,
      auth: createAuthenticator(database.db, TEST_KEYS),
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock: () => new Date(),
      jobs: replica.jobs,
      events: replica.events,
    },
    { ...options, queueDashboard: { queues: replica.queues, adminToken } },
  );
  return {
    app,
    replica,
    async close() {
      await app.close();
      await replica.close();
      redis.disconnect();
    },
  };
}
