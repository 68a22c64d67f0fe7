/**
 * Postgres and Redis for a local stack (the demo, the replay): are they there (and if not, how to
 * start them), and a clean slate for every run (its scratch database recreated, its queue prefix's keys
 * deleted). Only databases Compactor created and marked are ever dropped.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { createScratchDatabase, dropScratchDatabase, quoteIdent, redactUrl } from '@compactor/db';

/** Postgres or Redis is not reachable: the message says which and how to start it. */
export class ServiceMissingError extends Error {
  override readonly name = 'ServiceMissingError';
}

const START_POSTGRES = [
  "bash scripts/ensure-services.sh   # starts this machine's PostgreSQL and Redis, i.e.",
  '  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start',
  'docker compose up -d postgres     # or Postgres 16 in Docker (docker-compose.yml)',
];
const START_REDIS = [
  "bash scripts/ensure-services.sh   # starts this machine's PostgreSQL and Redis, i.e.",
  '  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \\',
  '    --dir /var/lib/redis --logfile /var/log/redis/ci.log',
  'docker compose up -d redis        # or Redis 7 in Docker (docker-compose.yml)',
];

/**
 * `fromEnv`: the URL came from the variable (check that server) rather than the local default
 * (start this machine's service).
 */
function explain(
  what: string,
  url: string,
  variable: string,
  fromEnv: boolean,
  error: unknown,
  commands: string[],
): string {
  const reason = (error as Error).message || String(error);
  return [
    `${what} is not reachable at ${redactUrl(url)} (${reason}).`,
    fromEnv
      ? `${variable} is set: check that server, or unset ${variable} to use the local default.`
      : `Start it (from the repository root), or point ${variable} at a running one:`,
    ...(fromEnv ? [] : commands.map((c) => `    ${c}`)),
  ].join('\n');
}

/** The URL with another database name (the server's maintenance database, or the stack's). */
export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/**
 * Connects to the server's `postgres` database and runs a query; throws a {@link ServiceMissingError}.
 * `fromEnv`: whether `url` came from DATABASE_URL (the message then says to check that server).
 */
export async function checkPostgres(url: string, fromEnv = false): Promise<string> {
  const client = new pg.Client({
    connectionString: withDatabase(url, 'postgres'),
    connectionTimeoutMillis: 3_000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>('show server_version');
    return rows[0]?.server_version ?? '?';
  } catch (error) {
    throw new ServiceMissingError(explain('PostgreSQL', url, 'DATABASE_URL', fromEnv, error, START_POSTGRES));
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** PING; throws a {@link ServiceMissingError}. `fromEnv`: whether `url` came from REDIS_URL. */
export async function checkRedis(url: string, fromEnv = false): Promise<string> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // The connection's own error (ECONNREFUSED …) says more than the rejection ("Connection is closed").
  let cause: Error | null = null;
  redis.on('error', (error: Error) => (cause ??= error));
  try {
    await redis.connect();
    await redis.ping();
    const info = await redis.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
  } catch (error) {
    throw new ServiceMissingError(explain('Redis', url, 'REDIS_URL', fromEnv, cause ?? error, START_REDIS));
  } finally {
    redis.disconnect();
  }
}

/** Runs `fn` on a connection to the server's `postgres` database (where databases are created and dropped). */
async function withServer<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: withDatabase(url, 'postgres') });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Drops the stack's database when it is a scratch database Compactor created; nothing when it
 * does not exist. A database of that name that Compactor did not create is someone else's: that
 * throws `NotScratchDatabaseError` and drops nothing.
 */
export async function dropDatabase(url: string): Promise<void> {
  await withServer(url, (client) => dropScratchDatabase(client, new URL(url).pathname.slice(1)));
}

/**
 * Drops the stack's scratch database (only one Compactor created, see {@link dropDatabase}) and
 * creates it again, marked as scratch, its commits not waiting for the WAL to reach the disk
 * (`synchronous_commit = off`, set on this database only): it is thrown away at the next run,
 * and on this machine the flush was 0.7–1.2 ms of every append. A Postgres crash could lose a
 * run's last fraction of a second of rows, never their consistency. The API migrates it when it
 * starts.
 */
export async function recreateScratchDatabase(url: string, purpose = 'local stack'): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  await withServer(url, async (client) => {
    await dropScratchDatabase(client, name);
    await createScratchDatabase(client, name, { purpose });
    await client.query(`alter database ${quoteIdent(name)} set synchronous_commit = off`);
  });
}

/** Deletes every key under the stack's queue prefix (jobs and events of earlier runs). */
export async function deleteQueueKeys(url: string, prefix: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  let deleted = 0;
  try {
    // SCAN's MATCH is a glob: escape the hash tag's braces and any other special character.
    const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}:*`;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}
