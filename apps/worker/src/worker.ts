import type { Logger } from 'pino';
import { createDatabase, migrationState, pingDatabase, redactUrl } from '@compactor/db';
import { createChatCompleter, createLlm, llmConfigFromEnv } from '@compactor/llm';
import type { WorkflowResources } from '@compactor/workflow';
import {
  boundedQueues,
  closeRedis,
  createRedis,
  REDIS_CLOSE_TIMEOUT_MS,
  REDIS_COMMAND_TIMEOUT_MS,
  settleWithin,
  createJobQueues,
  DEFAULT_JOB_POLICY,
  redisEventPublisher,
  followUpsOf,
  startDeferredWhenEnded,
  startReconciler,
  startWorkers,
} from '@compactor/queue';
import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import type { WorkerEnv } from './env';
import { startProbeServer } from './http';
import { createWorkerMetrics, type JobGauges } from './metrics';

/** A running worker process's parts; `stop` drains it. */
export interface WorkerProcess {
  port: number;
  stop(): Promise<{ drained: boolean }>;
}

/** The worker's connections: Postgres, BullMQ's Redis client and one for events and probes. */
interface Connections {
  database: ReturnType<typeof createDatabase>;
  /** BullMQ's: its blocking commands need maxRetriesPerRequest null (it duplicates this client for them). */
  connection: ReturnType<typeof createRedis>;
  /** Events and probes: bounded commands, so a Redis that stops answering fails them in seconds. */
  redis: ReturnType<typeof createRedis>;
}

/** Opens the worker's connections; refuses an unmigrated database (the API migrates; workers never race it). */
async function connect(env: WorkerEnv, log: Logger): Promise<Connections> {
  const state = await migrationState(env.DATABASE_URL);
  if (state.pending > 0) {
    throw new Error(
      `database ${redactUrl(env.DATABASE_URL)} lacks ${state.pending} of ${state.known} migrations; ` +
        'start the API (it migrates) or run `npm run db:migrate`',
    );
  }
  const database = createDatabase(env.DATABASE_URL, {
    applicationName: 'compactor-worker',
    max: env.DATABASE_POOL_SIZE,
    connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
    onConnectionError: (error) => log.warn({ err: error.message }, 'postgres connection lost'),
  });
  const connection = createRedis(env.REDIS_URL, { maxRetriesPerRequest: null });
  connection.on('error', (error: Error) =>
    log.warn({ err: error.message }, 'queue redis connection problem'),
  );
  const redis = createRedis(env.REDIS_URL, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
  });
  redis.on('error', (error) => log.warn({ err: error.message }, 'redis connection problem'));
  await redis
    .connect()
    .catch((error: Error) => log.warn({ err: error.message }, 'redis unreachable at start'));
  return { database, connection, redis };
}

/** The queues with the worker's job policy, their connection errors logged as JSON. */
function jobQueues(env: WorkerEnv, connection: Connections['connection'], log: Logger) {
  const policy = { ...DEFAULT_JOB_POLICY, attempts: env.JOB_ATTEMPTS, backoffBaseMs: env.JOB_BACKOFF_MS };
  const queues = createJobQueues({
    connection,
    prefix: env.QUEUE_PREFIX,
    policy,
    onError: (queue, error) => log.warn({ queue, err: error.message }, 'queue connection problem'),
  });
  return { policy, queues };
}

/**
 * What the workflow steps run with: the database, the metered LLM client, the clock, the log,
 * session events, the tokenizer, and the follow-ups a completing compaction requests.
 */
function workflowResources(
  env: WorkerEnv,
  parts: Pick<WorkflowResources, 'db' | 'clock' | 'log' | 'events' | 'followUps'> & {
    metrics: ReturnType<typeof createWorkerMetrics>;
  },
): WorkflowResources {
  const { config, defaults } = llmConfigFromEnv(env);
  const tokenizerFor = (modelId: string) =>
    getTokenizer(env.TOKENIZER_ENCODING === 'auto' ? encodingForModel(modelId) : env.TOKENIZER_ENCODING);
  tokenizerFor('gpt-4o').countSync('warm up');
  const { metrics, ...shared } = parts;
  return {
    ...shared,
    llm: createLlm(config, metrics.metered(createChatCompleter(config))),
    observer: metrics.observer,
    tokenizerFor,
    summarizerModel: defaults.summarizerModel,
    topicModel: defaults.topicModel,
  };
}

/**
 * The worker's composition root: its connections, the LLM client, the BullMQ workers, the
 * reconciler loop and the probe server.
 */
export async function startWorkerProcess(env: WorkerEnv, log: Logger): Promise<WorkerProcess> {
  const { database, connection, redis } = await connect(env, log);
  // The queues exist before the resources: the metrics read queue depths from them, and the
  // workflow reports steps, compactions and LLM requests to the metrics.
  const { policy, queues } = jobQueues(env, connection, log);
  let jobs: JobGauges = { active: () => 0, queued: () => 0 };
  const metrics = createWorkerMetrics(queues, { active: () => jobs.active(), queued: () => jobs.queued() });
  const events = redisEventPublisher(redis, env.QUEUE_PREFIX, (error) =>
    log.warn({ err: error.message }, 'event publish failed'),
  );
  const clock = () => new Date();
  // Compactions the worker starts (follow-ups, deferred ones): an enqueue Redis cannot take in
  // time is the reconciler's, not a job held open.
  const dispatch = { db: database.db, queues: boundedQueues(queues), events, log, clock };
  const resources = workflowResources(env, {
    db: database.db,
    clock,
    log,
    events,
    metrics,
    // A compaction outrun by appends requests the next one in its completing transaction.
    followUps: followUpsOf(dispatch),
  });
  const startDeferred = startDeferredWhenEnded(dispatch);
  const running = startWorkers(resources, {
    connection,
    prefix: env.QUEUE_PREFIX,
    policy,
    concurrency: env.WORKER_CONCURRENCY,
    stepConcurrency: env.WORKER_STEP_CONCURRENCY,
    lockDurationMs: env.LOCK_DURATION_MS,
    on: {
      'job.ended': metrics.jobEnded,
      'prune.ended': metrics.pruneEnded,
      // Counted, then: its end makes room under its tenant's cap, the tenant's deferred ones start.
      'compaction.ended': async (ended) => {
        metrics.compactionEnded(ended);
        await startDeferred(ended);
      },
    },
  });
  jobs = running;
  const reconciler = startReconciler(
    { db: database.db, queues, events, log, clock },
    {
      intervalMs: env.RECONCILE_INTERVAL_MS,
      stepTimeoutMs: env.STEP_TIMEOUT_MS,
      on: { 'reconciler.passed': metrics.reconciled },
    },
  );
  let accepting = true;
  const probes = await startProbeServer(
    {
      registry: metrics.registry,
      accepting: () => accepting,
      async ready() {
        await pingDatabase(database.db);
        await redis.ping();
      },
    },
    { port: env.PORT, host: env.HOST },
  );
  log.info(
    {
      port: probes.port,
      concurrency: env.WORKER_CONCURRENCY,
      stepConcurrency: env.WORKER_STEP_CONCURRENCY,
      prefix: env.QUEUE_PREFIX,
    },
    'worker started',
  );

  return {
    port: probes.port,
    async stop() {
      accepting = false;
      await reconciler.stop();
      const { drained } = await running.close(env.SHUTDOWN_TIMEOUT_MS);
      // Bounded: an unreachable Redis answers neither BullMQ's close nor QUIT.
      await Promise.all([
        settleWithin(queues.close(), REDIS_CLOSE_TIMEOUT_MS),
        database.close().catch(() => undefined),
        closeRedis(redis),
      ]);
      // Shared with BullMQ, which leaves a client it was given open.
      await closeRedis(connection);
      await new Promise((resolve) => probes.server.close(resolve));
      return { drained };
    },
  };
}
