import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import type { Db } from '@compactor/db';
import { getTokenizer } from '@compactor/tokenizer';
import { uniqueQueuePrefix } from '@compactor/testing';
import { createAuthenticator } from '../http/auth';
import { buildServer, type ServerOptions } from '../server';
import { createTestReplica, TENANT_A_KEY, TEST_KEYS, type TestReplica } from './api';

/** An API built over a database of the test's choosing (its own server, a proxied one), and its parts. */
export interface ServerOn {
  app: FastifyInstance;
  replica: TestReplica;
  /** `app.inject` as tenant A, with a JSON body when there is one. */
  request(method: 'GET' | 'POST', url: string, payload?: unknown): Promise<LightMyRequestResponse>;
  /** Stops the API, its queues and events and its Redis client; the database is the caller's. */
  close(): Promise<void>;
}

/**
 * `buildServer` over `db` with the test keys, real queues and events under a fresh prefix named
 * after `label`, and a Redis client for the probes: what a file needs when `useTestApi`'s own
 * database will not do (a private Postgres to freeze, a proxy in front of one). `options` may be
 * built from the replica (the queue dashboard serves its queues).
 */
export async function buildServerOn(
  db: Db,
  label: string,
  options: ServerOptions | ((replica: TestReplica) => ServerOptions) = {},
): Promise<ServerOn> {
  const redis = new Redis(inject('redisUrl'), { lazyConnect: true, maxRetriesPerRequest: 1 });
  const replica = createTestReplica(db, uniqueQueuePrefix(label));
  const app = await buildServer(
    {
      db,
      redis,
      auth: createAuthenticator(db, TEST_KEYS),
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock: () => new Date(),
      jobs: replica.jobs,
      events: replica.events,
    },
    typeof options === 'function' ? options(replica) : options,
  );
  return {
    app,
    replica,
    request: (method, url, payload) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${TENANT_A_KEY}` },
        ...(payload === undefined ? {} : { payload: payload as object }),
      }),
    async close() {
      await app.close();
      await replica.close();
      redis.disconnect();
    },
  };
}
