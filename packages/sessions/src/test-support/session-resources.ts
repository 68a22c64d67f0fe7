/**
 * Real resources for a session package test file, without HTTP: the file's own Postgres
 * database, BullMQ queues and event channels on the test Redis under a prefix of its own, and
 * jobs started through `@compactor/queue`'s dispatch exactly as the API binds them.
 */
import { afterAll, beforeAll, inject } from 'vitest';
import { AppendMessagesBody, type CreateSessionInput } from '@compactor/contract';
import {
  announceCompactionReverted,
  announcePruneSkipped,
  announceSessionDeleted,
  createJobQueues,
  createRedis,
  JOB_NAMES,
  redisEventPublisher,
  redisEventSource,
  startCompaction,
  startPrepare,
  startPrune,
  type DispatchDeps,
  type JobName,
  type JobQueues,
  type RedisClient,
} from '@compactor/queue';
import { useTestDatabase, type TestDatabase } from '@compactor/db/testing';
import { uniqueQueuePrefix } from '@compactor/testing';
import { getTokenizer } from '@compactor/tokenizer';
import { SessionMessages, type AppendBody } from '../messages';
import type { OperationLog, SessionJobs, SessionResources } from '../resources';
import { createSession } from '../sessions';
import { NO_TENANT_LIMITS, TenantLimits, type TenantLimitSettings } from '../tenant-limits';

export interface TestSessions {
  readonly database: TestDatabase;
  readonly resources: SessionResources;
  readonly limits: TenantLimits;
  readonly messages: SessionMessages;
  readonly queues: JobQueues;
  /** What the operations logged as warnings (they never fail a committed write). */
  readonly warnings: string[];
  readonly log: OperationLog;
  /** The ids of a queue's jobs, whatever their state (nothing consumes them here). */
  jobIds(name: JobName): Promise<string[]>;
}

/** An append's body as the API hands it over: validated by the contract's schema. */
export function parsedMessages(messages: unknown[]): AppendBody {
  return { kind: 'parsed', messages: AppendMessagesBody.parse({ messages }).messages };
}

/**
 * Session resources over this file's database and the test Redis. `limits` are the tenant caps
 * (none by default), `sessionWriteQueueLimit` the per-session write queue. Call at the top level.
 */
export function useTestSessions(
  options: { limits?: Partial<TenantLimitSettings>; sessionWriteQueueLimit?: number } = {},
): TestSessions {
  const database = useTestDatabase();
  const prefix = uniqueQueuePrefix('sessions');
  const warnings: string[] = [];
  const log: OperationLog = { warn: (_fields, message) => void warnings.push(message) };
  let state:
    | {
        resources: SessionResources;
        limits: TenantLimits;
        messages: SessionMessages;
        queues: JobQueues;
        connections: RedisClient[];
      }
    | undefined;

  beforeAll(() => {
    const url = inject('redisUrl');
    const queueRedis = createRedis(url, { maxRetriesPerRequest: null });
    const publisherRedis = createRedis(url, { maxRetriesPerRequest: 1 });
    const subscriber = createRedis(url, { maxRetriesPerRequest: null });
    const queues = createJobQueues({ connection: queueRedis, prefix });
    const clock = () => new Date();
    const deps: DispatchDeps = {
      db: database.db,
      queues,
      events: redisEventPublisher(publisherRedis, prefix),
      log: { info: () => undefined, warn: (_fields, message) => void warnings.push(message) },
      clock,
    };
    const jobs: SessionJobs = {
      startCompaction: (session, request, caps) => startCompaction(deps, session, request, caps),
      startPrune: (session, reason) => startPrune(deps, session, reason),
      startPrepare: (session, base, headroom) => startPrepare(deps, session, base, headroom),
      sessionDeleted: (session) => announceSessionDeleted(deps, session),
      pruneSkipped: (session, data) => announcePruneSkipped(deps, session, data),
      compactionReverted: (session, compaction, data) =>
        announceCompactionReverted(deps, session, compaction, data),
    };
    const resources: SessionResources = {
      db: database.db,
      tokenizerFor: () => getTokenizer('o200k_base'),
      clock,
      jobs,
      events: redisEventSource(subscriber, prefix, publisherRedis),
    };
    const limits = new TenantLimits({ ...NO_TENANT_LIMITS, ...options.limits });
    const messages = new SessionMessages(resources, limits, {
      sessionWriteQueueLimit: options.sessionWriteQueueLimit,
    });
    state = { resources, limits, messages, queues, connections: [queueRedis, publisherRedis, subscriber] };
  });

  afterAll(async () => {
    if (!state) return;
    const { queues, messages, resources, connections } = state;
    // Prefixes are unique: leave nothing behind in the shared Redis.
    await Promise.allSettled(JOB_NAMES.map((name) => queues.queue(name).obliterate({ force: true })));
    await Promise.allSettled([messages.close(), queues.close(), resources.events.close()]);
    for (const connection of connections) connection.disconnect();
  });

  const current = () => {
    if (!state) throw new Error('useTestSessions(): the resources exist only inside tests and hooks');
    return state;
  };
  return {
    database,
    warnings,
    log,
    get resources() {
      return current().resources;
    },
    get limits() {
      return current().limits;
    },
    get messages() {
      return current().messages;
    },
    get queues() {
      return current().queues;
    },
    async jobIds(name) {
      const jobs = await current().queues.queue(name).getJobs();
      return jobs.flatMap((job) => (job?.id ? [job.id] : []));
    },
  };
}

/** A model with a small window: usable 7,000 tokens (8,000 less 1,000 of output). */
export const SMALL_MODEL = { id: 'tiny-model', contextWindow: 8_000, maxOutputTokens: 1_000 };

/** Creates a session as a client would (no rate), with the small model unless told otherwise. */
export async function newSession(
  t: TestSessions,
  tenantId: string,
  id: string,
  body: Partial<CreateSessionInput> = {},
) {
  const { session } = await createSession(t.database.db, tenantId, { id, model: SMALL_MODEL, ...body });
  return session;
}

/** A user message of about `words` tokens (one per repeated word). */
export const userText = (words: number, id?: string) => ({
  ...(id ? { id } : {}),
  role: 'user' as const,
  parts: [{ type: 'text' as const, text: ' word'.repeat(words) }],
});

/** An assistant turn that ends with `stop`, reporting `input` tokens of prompt. */
export const finishedTurn = (input: number, id?: string) => ({
  ...(id ? { id } : {}),
  role: 'assistant' as const,
  parts: [{ type: 'text' as const, text: 'done' }],
  finish: 'stop' as const,
  usage: { input, output: 10 },
});
