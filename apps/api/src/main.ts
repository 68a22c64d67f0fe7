/**
 * `npm run api`: parses the environment, prepares the database (creates it if missing, migrates
 * or refuses to start unmigrated), then serves until SIGTERM/SIGINT, draining in-flight requests.
 */
import pino from 'pino';
import {
  createDatabase,
  ensureDatabase,
  migrateDatabase,
  migrationState,
  redactUrl,
  type Db,
} from '@compactor/db';
import {
  closeRedis,
  createRedis,
  queueCounts,
  createJobQueues,
  redisEventPublisher,
  redisEventSource,
  REDIS_CLOSE_TIMEOUT_MS,
  REDIS_COMMAND_TIMEOUT_MS,
  settleWithin,
} from '@compactor/queue';
import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import {
  dropInSettings,
  openStartRefusal,
  parseApiKeys,
  parseEnv,
  tenantLimitSettings,
  type Env,
} from './env';
import { createAuthenticator } from './http/auth';
import { buildMetricsServer, createApiMetrics } from './http/metrics';
import { createApiJobs } from './jobs';
import { buildServer } from './server';
import { tenantGateOf } from './http/tenant-gate';
import { largeWriteSettingsOf } from './http/large-writes';

let env: Env;
let dropIn: ReturnType<typeof dropInSettings>;
try {
  env = parseEnv();
  dropIn = dropInSettings(env);
} catch (error) {
  // A configuration mistake deserves a readable message, not a stack trace.
  console.error((error as Error).message);
  process.exit(1);
}
const log = pino({ level: env.LOG_LEVEL, name: 'compactor-api' });

async function prepareDatabase(): Promise<void> {
  try {
    if (await ensureDatabase(env.DATABASE_URL))
      log.info({ db: redactUrl(env.DATABASE_URL) }, 'created database');
  } catch (error) {
    log.warn({ err: error }, 'could not check or create the database; assuming it exists');
  }
  if (env.MIGRATE_ON_START) {
    const { applied } = await migrateDatabase(env.DATABASE_URL);
    log.info({ applied }, applied ? 'applied migrations' : 'database schema is up to date');
    return;
  }
  const state = await migrationState(env.DATABASE_URL);
  if (state.pending > 0) {
    throw new Error(
      `database ${redactUrl(env.DATABASE_URL)} lacks ${state.pending} of ${state.known} migrations; ` +
        'run `npm run db:migrate` or start with MIGRATE_ON_START=true',
    );
  }
}

/** The API's pool, behind the breaker: a frozen Postgres is a 503 within seconds. */
function openDatabase() {
  return createDatabase(env.DATABASE_URL, {
    applicationName: 'compactor-api',
    max: env.DATABASE_POOL_SIZE,
    connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
    // One tenant's flood of requests never queues another's behind it for a connection.
    tenantShares: true,
    // Nor makes another's request open a connection and prepare its statements on a new backend.
    keepWarm: true,
    // A frozen Postgres is answered 503 within seconds, not after every request's statement timeout.
    breaker: {
      onStateChange: (state, detail) =>
        state === 'open'
          ? log.error({ err: detail }, 'database not answering: breaker open, requests answered 503')
          : log.info('database answering again: breaker closed'),
    },
  });
}

/**
 * The API's three Redis clients: bounded commands (probes, publishing), BullMQ's (no offline
 * queue), and the event stream's subscriber (a subscribed connection can do nothing else).
 */
async function connectRedis() {
  const redis = createRedis(env.REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
  });
  redis.on('error', (error) => log.warn({ err: error.message }, 'redis connection problem'));
  await redis
    .connect()
    .catch((error: Error) => log.warn({ err: error.message }, 'redis unreachable at start'));
  // BullMQ gets its own connection, not the probe's: no per-command retry limit (BullMQ wants
  // maxRetriesPerRequest null), and no offline queue, so an enqueue while Redis is away fails at
  // once (BullMQ's docs for HTTP producers) instead of queueing in memory; jobs.ts also bounds
  // each enqueue by a timeout. Either way the outbox keeps the job for the reconciler.
  const queueRedis = createRedis(env.REDIS_URL, { maxRetriesPerRequest: null, enableOfflineQueue: false });
  queueRedis.on('error', (error) => log.warn({ err: error.message }, 'queue redis connection problem'));
  const subscriber = createRedis(env.REDIS_URL, { maxRetriesPerRequest: null });
  subscriber.on('error', (error) => log.warn({ err: error.message }, 'event subscriber connection problem'));
  return { redis, queueRedis, subscriber };
}

/** The key check; refuses a production start with no key anywhere unless told to run open. */
async function authenticator(db: Db) {
  const auth = createAuthenticator(db, parseApiKeys(env.API_KEYS));
  const open = await auth.isOpen();
  const refusal = openStartRefusal(env, !open);
  if (refusal) throw new StartRefused(refusal);
  if (open) {
    log.warn(
      'no API keys configured (API_KEYS empty, keys table empty): the API is OPEN to anyone who can reach it',
    );
  }
  return auth;
}

async function main(): Promise<void> {
  await prepareDatabase();
  const database = openDatabase();
  await database
    .openAll()
    .catch((error: Error) =>
      log.warn(
        { err: error.message },
        'could not open every database connection; opening them as requests come',
      ),
    );
  const { redis, queueRedis, subscriber } = await connectRedis();
  const queues = createJobQueues({
    connection: queueRedis,
    prefix: env.QUEUE_PREFIX,
    // Logged once, as the connection's: a queue's copy of the same error adds nothing.
    onError: () => undefined,
  });
  const events = redisEventSource(subscriber, env.QUEUE_PREFIX, redis);
  const clock = () => new Date();
  const jobs = createApiJobs({
    db: database.db,
    queues,
    events: redisEventPublisher(redis, env.QUEUE_PREFIX, (error) =>
      log.warn({ err: error.message }, 'could not publish a session event'),
    ),
    log,
    clock,
  });
  const auth = await authenticator(database.db);

  // Load rank tables before listening, so the first request does not pay for it.
  const tokenizerFor = (modelId: string) =>
    getTokenizer(env.TOKENIZER_ENCODING === 'auto' ? encodingForModel(modelId) : env.TOKENIZER_ENCODING);
  tokenizerFor('gpt-4o').countSync('warm up');

  const metrics = createApiMetrics({
    queueCounts: () => queueCounts(queues),
    databaseBreakerOpen: () => database.breaker?.isOpen === true,
  });
  const app = await buildServer(
    { db: database.db, redis, auth, tokenizerFor, clock, jobs, events },
    {
      logger: log,
      requestLogLevel: env.REQUEST_LOG_LEVEL,
      bodyLimit: env.BODY_LIMIT_BYTES,
      trustProxy: env.TRUST_PROXY,
      sessionWriteQueueLimit: env.SESSION_WRITE_QUEUE_LIMIT,
      tenantLimits: tenantLimitSettings(env),
      dropIn,
      tenantGate: tenantGateOf(env),
      largeWrites: largeWriteSettingsOf(process.env),
      metrics,
      metricsOnOwnPort: env.METRICS_PORT !== undefined,
      ...(env.ADMIN_TOKEN ? { queueDashboard: { queues, adminToken: env.ADMIN_TOKEN } } : {}),
    },
  );
  // The metrics listener first: a port it cannot have stops the start before traffic arrives.
  const metricsServer = env.METRICS_PORT === undefined ? null : await buildMetricsServer(metrics);
  if (metricsServer) {
    const url = await metricsServer.listen({ port: env.METRICS_PORT, host: env.HOST });
    log.info({ url }, `metrics served at ${url}/metrics (not on PORT)`);
  }
  await app.listen({ port: env.PORT, host: env.HOST });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down: draining requests');
    const force = setTimeout(() => {
      log.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    await app.close();
    await metricsServer?.close();
    // Bounded: an unreachable Redis answers neither BullMQ's close nor QUIT, and its clients
    // would keep reconnecting (and the process alive) until the force exit.
    await Promise.all([
      settleWithin(queues.close(), REDIS_CLOSE_TIMEOUT_MS),
      settleWithin(events.close(), REDIS_CLOSE_TIMEOUT_MS),
    ]);
    await Promise.all([database.close().catch(() => undefined), closeRedis(redis), closeRedis(queueRedis)]);
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** A start refused on purpose: its message says what to set, a stack trace would bury it. */
class StartRefused extends Error {}

main().catch((error: Error) => {
  if (error instanceof StartRefused) log.fatal(error.message);
  else log.fatal({ err: error }, error.message);
  process.exit(1);
});
