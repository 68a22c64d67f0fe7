import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, inject } from 'vitest';
import { getTokenizer } from '@compactor/tokenizer';
import { useTestDatabase, type TestDatabase } from '@compactor/testing';
import { createAuthenticator } from '../http/auth';
import type { RedisPing } from '../resources';
import { buildServer } from '../server';

export interface TestApi {
  readonly app: FastifyInstance;
  readonly database: TestDatabase;
  /** `app.inject` with a JSON body and, by default, tenant A's key. */
  request(options: InjectOptions & { key?: string | null }): Promise<LightMyRequestResponse>;
}

export const TENANT_A_KEY = 'key-tenant-a';
export const TENANT_B_KEY = 'key-tenant-b';

/**
 * A real API over this file's own database and the test Redis, with two tenants' keys. Call at
 * the top level of a test file.
 */
export function useTestApi(
  options: { keys?: Map<string, string>; redis?: RedisPing; clock?: () => Date; bodyLimit?: number } = {},
): TestApi {
  const database = useTestDatabase();
  let app: FastifyInstance | undefined;
  let redis: Redis | undefined;

  beforeAll(async () => {
    redis = new Redis(inject('redisUrl'), { lazyConnect: true, maxRetriesPerRequest: 1 });
    const keys =
      options.keys ??
      new Map([
        [TENANT_A_KEY, 'tenant-a'],
        [TENANT_B_KEY, 'tenant-b'],
      ]);
    app = await buildServer(
      {
        db: database.db,
        redis: options.redis ?? redis,
        auth: createAuthenticator(database.db, keys),
        tokenizerFor: () => getTokenizer('o200k_base'),
        clock: options.clock ?? (() => new Date()),
      },
      options.bodyLimit ? { bodyLimit: options.bodyLimit } : {},
    );
  });

  afterAll(async () => {
    await app?.close();
    redis?.disconnect();
  });

  return {
    get app() {
      if (!app) throw new Error('useTestApi(): the app exists only inside tests and hooks');
      return app;
    },
    database,
    request({ key = TENANT_A_KEY, headers, ...rest }) {
      if (!app) throw new Error('useTestApi(): the app exists only inside tests and hooks');
      return app.inject({
        ...rest,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
      });
    },
  };
}
