import type { ApiResources } from '../resources';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, inject } from 'vitest';
import type { SessionEventPublisher } from '@compactor/workflow';
import {
  createJobQueues,
  JOB_NAMES,
  redisEventPublisher,
  redisEventSource,
  type JobName,
  type JobQueues,
  type SessionEventSource,
} from '@compactor/queue';
import type { Db } from '@compactor/db';
import { getTokenizer } from '@compactor/tokenizer';
import { useTestDatabase, type TestDatabase } from '@compactor/db/testing';
import { uniqueQueuePrefix } from '@compactor/testing';
import { createAuthenticator } from '../http/auth';
import { createApiJobs } from '../jobs';
import type { ApiJobs, RedisPing } from '../resources';
import { buildServer, type ServerOptions } from '../server';

export interface TestApi {
  readonly app: FastifyInstance;
  readonly database: TestDatabase;
  /** The real queues (on the test Redis, under {@link TestApi.queuePrefix}): `queue('compact').getJob(id)`. */
  readonly queues: JobQueues;
  readonly queuePrefix: string;
  /** Publishes on the same channels the workers use. */
  readonly publisher: SessionEventPublisher;
  /** `app.inject` with a JSON body and, by default, tenant A's key. */
  request(options: InjectOptions & { key?: string | null }): Promise<LightMyRequestResponse>;
  /** Row counts of the tables a request may write, to assert that a rejected one wrote nothing. */
  counts(): Promise<Record<'sessions' | 'messages' | 'compactions' | 'outbox', number>>;
  /** Every job of a queue, whatever its state. */
  jobs(name: JobName): Promise<Job[]>;
}

type Queue = ReturnType<JobQueues['queue']>;
type Job = Awaited<ReturnType<Queue['getJobs']>>[number];
const JOB_STATES: Parameters<Queue['getJobs']>[0] = [
  'waiting',
  'delayed',
  'prioritized',
  'active',
  'completed',
  'failed',
  'waiting-children',
];

export const TENANT_A_KEY = 'key-tenant-a';
export const TENANT_B_KEY = 'key-tenant-b';

export const TEST_KEYS = new Map([
  [TENANT_A_KEY, 'tenant-a'],
  [TENANT_B_KEY, 'tenant-b'],
]);

/** Replaces or wraps the jobs the routes use (fault injection), given what they are built from. */
export type WrapJobs = (
  jobs: ApiJobs,
  context: { db: Db; queues: JobQueues; publisher: SessionEventPublisher },
) => ApiJobs;

/** One API replica's Redis-side resources: queues, event publisher and subscriber, jobs. */
export interface TestReplica {
  queues: JobQueues;
  publisher: SessionEventPublisher;
  events: SessionEventSource;
  jobs: ApiJobs;
  close(): Promise<void>;
}

/**
 * Queues, events and jobs on the test Redis under `prefix`, with their own connections (as
 * main.ts wires them). Two replicas on the same prefix see each other's events and jobs.
 */
export function createTestReplica(
  db: Db,
  prefix: string,
  options: { clock?: () => Date; jobs?: WrapJobs } = {},
): TestReplica {
  const url = inject('redisUrl');
  const queueRedis = new Redis(url, { maxRetriesPerRequest: null });
  const publisherRedis = new Redis(url, { maxRetriesPerRequest: 1 });
  const subscriber = new Redis(url, { maxRetriesPerRequest: null });
  const queues = createJobQueues({ connection: queueRedis, prefix });
  const publisher = redisEventPublisher(publisherRedis, prefix);
  const events = redisEventSource(subscriber, prefix, publisherRedis);
  const jobs = createApiJobs({
    db,
    queues,
    events: publisher,
    log: { info: () => undefined, warn: () => undefined },
    clock: options.clock ?? (() => new Date()),
  });
  return {
    queues,
    publisher,
    events,
    jobs: options.jobs ? options.jobs(jobs, { db, queues, publisher }) : jobs,
    async close() {
      // Test prefixes are unique: leave nothing behind in the shared Redis.
      await Promise.allSettled(JOB_NAMES.map((name) => queues.queue(name).obliterate({ force: true })));
      await Promise.allSettled([queues.close(), events.close()]);
      queueRedis.disconnect();
      publisherRedis.disconnect();
    },
  };
}

/**
 * A real API over this file's own database and the test Redis (real queues under a unique
 * prefix), with two tenants' keys. Call at the top level of a test file.
 */
export function useTestApi(
  options: {
    keys?: Map<string, string>;
    redis?: RedisPing;
    clock?: () => Date;
    bodyLimit?: number;
    server?: ServerOptions;
    /** Wraps the jobs the routes use (fault injection). */
    jobs?: WrapJobs;
    /** The counter for a session's model; o200k for every model by default. */
    tokenizerFor?: ApiResources['tokenizerFor'];
  } = {},
): TestApi {
  const database = useTestDatabase();
  const queuePrefix = uniqueQueuePrefix('api');
  let app: FastifyInstance | undefined;
  let redis: Redis | undefined;
  let replica: TestReplica | undefined;

  beforeAll(async () => {
    redis = new Redis(inject('redisUrl'), { lazyConnect: true, maxRetriesPerRequest: 1 });
    replica = createTestReplica(database.db, queuePrefix, {
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.jobs ? { jobs: options.jobs } : {}),
    });
    app = await buildServer(
      {
        db: database.db,
        redis: options.redis ?? redis,
        auth: createAuthenticator(database.db, options.keys ?? TEST_KEYS),
        tokenizerFor: options.tokenizerFor ?? (() => getTokenizer('o200k_base')),
        clock: options.clock ?? (() => new Date()),
        jobs: replica.jobs,
        events: replica.events,
      },
      { ...options.server, ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}) },
    );
  });

  afterAll(async () => {
    await app?.close();
    await replica?.close();
    redis?.disconnect();
  });

  const current = () => {
    if (!app || !replica) throw new Error('useTestApi(): the app exists only inside tests and hooks');
    return { app, replica };
  };
  return {
    get app() {
      return current().app;
    },
    get queues() {
      return current().replica.queues;
    },
    get publisher() {
      return current().replica.publisher;
    },
    queuePrefix,
    database,
    request({ key = TENANT_A_KEY, headers, ...rest }) {
      return current().app.inject({
        ...rest,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
      });
    },
    async counts() {
      const { rows } = await database.database.pool.query(
        `select (select count(*) from sessions)::int as sessions, (select count(*) from messages)::int as messages,
                (select count(*) from compactions)::int as compactions, (select count(*) from outbox)::int as outbox`,
      );
      return rows[0];
    },
    jobs(name) {
      return current().replica.queues.queue(name).getJobs(JOB_STATES);
    },
  };
}
