import pg from 'pg';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import * as schema from './schema';
import { DatabaseBreaker, type DatabaseBreakerOptions } from './breaker';
import { shareByTenant } from './tenant-shares';

/** Every table of `./schema`, as drizzle types them. */
export type Schema = typeof schema;
/** A drizzle handle over a `pg` pool; open one with {@link createDatabase}. */
export type Db = NodePgDatabase<Schema> & { $client: pg.Pool };
/** The transaction handle drizzle passes to `db.transaction(fn)`. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Every query function takes one of these first, so callers choose the transaction. */
export type DbOrTx = Db | Tx;

/** A pool and its drizzle handle; `close()` ends the pool (its owner calls it once, at shutdown). */
export interface Database {
  db: Db;
  pool: pg.Pool;
  /** Set when opened with {@link DatabaseOptions.breaker}. */
  breaker?: DatabaseBreaker;
  /** Opens the pool's connections up to its size (at once, beside any it has); see `keepWarm`. */
  openAll(): Promise<void>;
  close(): Promise<void>;
}

/** Pool settings; `applicationName` (default `compactor`) is what `pg_stat_activity` shows. */
export interface DatabaseOptions {
  /** Pool size; the API and each worker process own one pool. */
  max?: number;
  applicationName?: string;
  /** Told when a connection is lost (idle or checked out); the pool replaces it either way. */
  onConnectionError?: (error: Error) => void;
  /**
   * How long opening a connection, or waiting for a free one of the pool, may take before the
   * caller gets an error (default {@link DEFAULT_CONNECT_TIMEOUT_MS}): a database that is down or
   * full answers fast instead of queueing requests without end.
   */
  connectTimeoutMs?: number;
  /**
   * The longest statement (default {@link DEFAULT_STATEMENT_TIMEOUT_MS}): Postgres cancels it
   * (`statement_timeout`), and the client gives up {@link QUERY_TIMEOUT_MARGIN_MS} later on its
   * own, for a server that stopped answering altogether (frozen, or cut off without a reset).
   * 0: no limit (benchmarks seeding millions of rows, the retention purge).
   */
  statementTimeoutMs?: number;
  /**
   * Put a {@link DatabaseBreaker} in front of the pool (the API does): once a probe finds the
   * server not answering, checkouts fail at once until it answers again. Processes whose retries
   * are a queue's (the workers) go without: their statements wait out the timeouts.
   */
  breaker?: boolean | DatabaseBreakerOptions;
  /**
   * Admit waiting checkouts tenant by tenant, round-robin ({@link shareByTenant}; the tenant is
   * the one `runAsTenant` names), instead of first come first served: the API does, so one
   * tenant's flood of requests never queues another's behind it. The workers go without: their
   * fairness is the queue's (a job's priority is its rank in its tenant's backlog).
   */
  tenantShares?: boolean;
  /**
   * Keep every connection warm: the pool keeps `max` connections however long they idle
   * ({@link Database.openAll} opens them), and hands out the idle one that has waited longest
   * where pg-pool takes the most recent. Ordinary traffic then prepares every connection's
   * statements, so a burst that needs them all finds them ready; otherwise the request that
   * finds none idle waits for a new connection and runs its first statements on a new backend,
   * measured at 2–4× an append's usual time (the API: another tenant's append during a flood).
   */
  keepWarm?: boolean;
}

/** Default of {@link DatabaseOptions.connectTimeoutMs}. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** Default of {@link DatabaseOptions.statementTimeoutMs}: the API's longest statements take seconds. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;
/** How much longer than `statement_timeout` the client waits for an answer before it gives up. */
export const QUERY_TIMEOUT_MARGIN_MS = 2_000;

/**
 * How long an idle connection stays open. pg-pool's default (10 s) is shorter than an agent's
 * turn: a session appended to every 15 s would get a new connection on every append, and a new
 * connection plans the hot statements again (Postgres tries five custom plans per connection
 * before it settles on the cached generic one). Measured: the status statement 17.7 ms on the
 * first use after 11 s idle, then 4–5 ms, against 2 ms warm.
 */
export const POOL_IDLE_TIMEOUT_MS = 5 * 60_000;

/** Opens a pool and a drizzle handle over it. The caller owns `close()`. */
export function createDatabase(url: string, options: DatabaseOptions = {}): Database {
  const statementTimeout = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const max = options.max ?? 10;
  const pool = new pg.Pool({
    connectionString: url,
    max,
    ...(options.keepWarm ? { min: max } : {}),
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    statement_timeout: statementTimeout,
    ...(statementTimeout > 0 ? { query_timeout: statementTimeout + QUERY_TIMEOUT_MARGIN_MS } : {}),
    // A peer that vanished without a reset (a host gone, a cut network) is noticed by TCP.
    keepAlive: true,
    application_name: options.applicationName ?? 'compactor',
    // No JIT: every query here is an OLTP read of one session's kept window, and the planner,
    // which cannot know the boundary before run time, over-estimates the view and switches JIT
    // on: measured on a 100k-message session, 89 ms of JIT compilation for a 1 ms status query.
    //
    // `client_connection_check_interval` (Postgres 14+): a backend whose client died (a worker
    // SIGKILLed mid-statement) notices within 250 ms and aborts, instead of running what it was
    // sent to the end. A pipelined completion (`executePipelined`) arrives whole, so without it
    // the server would commit the dead worker's finalize; with it the attempt is rolled back like
    // any unfinished transaction, and a later attempt finalizes the saved draft.
    options: '-c jit=off -c client_connection_check_interval=250',
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener
  // that would crash the process. The next checkout reconnects.
  pool.on('error', () => undefined);
  // pg-pool drops its own listener while a client is checked out (a transaction between two
  // statements): a FATAL from the server then (restart, pg_terminate_backend) would crash the
  // process. The client's next query fails instead, which callers treat as transient.
  // The client's own listener sees both cases, so a loss is reported once.
  const lost = options.onConnectionError ?? (() => undefined);
  pool.on('connect', (client) => client.on('error', lost));
  const db = drizzle({ client: pool, schema });
  const breaker = options.breaker
    ? new DatabaseBreaker(
        pool,
        {
          connectionString: url,
          keepAlive: true,
          application_name: `${options.applicationName ?? 'compactor'}-probe`,
        },
        options.breaker === true ? {} : options.breaker,
      )
    : undefined;
  if (options.tenantShares) shareByTenant(pool, max, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
  if (options.keepWarm) takeLongestIdleFirst(pool);
  return {
    db,
    pool,
    ...(breaker ? { breaker } : {}),
    openAll: () => openAll(pool, max),
    close: async () => {
      breaker?.close();
      await pool.end();
    },
  };
}

/**
 * pg-pool's idle connections are an array it takes from with `pop` (the most recently released;
 * pg is pinned to one version, and warm-pool.test.ts checks the order): taking from the front
 * instead hands out the connection that has idled longest, so every one is used in turn.
 */
function takeLongestIdleFirst(pool: pg.Pool): void {
  const idle = (pool as unknown as { _idle: unknown[] })._idle;
  idle.pop = () => idle.shift();
}

/**
 * Checks out `count` connections at once and gives them back: the pool opens what it lacks.
 * pg-pool's own checkout, beneath the breaker's and the tenant shares' (which would count these
 * as one caller's and hold some back).
 */
async function openAll(pool: pg.Pool, count: number): Promise<void> {
  const connect = pg.Pool.prototype.connect as (this: pg.Pool) => Promise<pg.PoolClient>;
  const clients = await Promise.allSettled(Array.from({ length: count }, () => connect.call(pool)));
  for (const client of clients) if (client.status === 'fulfilled') client.value.release();
  const failed = clients.find((client) => client.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
