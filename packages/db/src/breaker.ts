import pg from 'pg';
import { DatabaseBreakerOpenError, isDatabaseUnavailable } from './errors';

/** Timings of a {@link DatabaseBreaker}; the defaults answer within seconds of a freeze. */
export interface DatabaseBreakerOptions {
  /**
   * How long a checkout (waiting for a connection, or holding one) may last before the breaker
   * asks the server whether it still answers (default 1,000 ms). Statements this long are
   * legitimate too: a probe that succeeds leaves them alone, so this only sets how soon a freeze
   * is noticed, and what a slow statement costs (a probe every `suspectProbeIntervalMs`).
   */
  suspectAfterMs?: number;
  /** Probes while closed and something looks stuck, at most this often (default 500 ms). */
  suspectProbeIntervalMs?: number;
  /** Probes while open (default 250 ms): how soon after the server is back it serves again. */
  openProbeIntervalMs?: number;
  /** A probe (a new connection and `select 1`) that takes longer failed (default 1,000 ms). */
  probeTimeoutMs?: number;
  /** Told when the breaker opens (with what the probe saw) and when it closes. */
  onStateChange?: (state: 'open' | 'closed', detail?: string) => void;
}

/**
 * The pg internals the breaker reaches for: a checked-out client's socket, destroyed so the
 * statement on it fails now rather than at its timeout. pg is pinned (pg-internals.test.ts).
 */
type ClientWithSocket = pg.PoolClient & { connection?: { stream?: { destroy(): void } } };

type ConnectCallback = (error: Error | undefined, client?: pg.PoolClient, done?: () => void) => void;

/** A checkout waiting for a connection: since when, and how to refuse it when the breaker opens. */
interface Waiter {
  since: number;
  refuse(): void;
}

const breakers = new WeakMap<pg.Pool, DatabaseBreaker>();

/** The breaker in front of `pool`, if it has one (the readiness probe reports it). */
export function breakerOf(pool: pg.Pool): DatabaseBreaker | undefined {
  return breakers.get(pool);
}

/**
 * A circuit breaker in front of a pool, for a process that must answer while Postgres does not
 * (the API: a request waits at most a moment, then gets a 503 it can retry). Without it every
 * request on a frozen server waits its whole statement timeout, 17 s by default.
 *
 * Closed, it costs a flag test, a map entry and a closure or two per checkout (measured: 1–2 µs
 * more per checkout and release, against milliseconds for an append). It
 * suspects the server when a checkout has lasted `suspectAfterMs`, or when a connection fails
 * the way an unreachable server fails one; then one probe at a time (a connection of its own,
 * outside the pool, so a pool full of stuck connections cannot hold it) asks for `select 1`. A
 * probe that fails opens the breaker: every checkout is refused at once with
 * {@link DatabaseBreakerOpenError} (which `isDatabaseUnavailable` classifies), and the sockets of
 * the connections checked out are destroyed, so the statements on them fail now (a COMMIT already
 * sent may still commit when the server thaws: writes are idempotent by id for that). Open, it
 * probes every `openProbeIntervalMs`; the first probe that succeeds closes it.
 */
export class DatabaseBreaker {
  private openSince: number | null = null;
  private probing = false;
  private lastProbeAt = 0;
  private readonly held = new Map<pg.PoolClient, number>();
  private readonly waiting = new Set<Waiter>();
  private readonly timer: NodeJS.Timeout;
  private readonly suspectAfterMs: number;
  private readonly suspectProbeIntervalMs: number;
  private readonly openProbeIntervalMs: number;
  private readonly probeTimeoutMs: number;

  constructor(
    private readonly pool: pg.Pool,
    private readonly probeConfig: pg.ClientConfig,
    private readonly options: DatabaseBreakerOptions = {},
  ) {
    this.suspectAfterMs = options.suspectAfterMs ?? 1_000;
    this.suspectProbeIntervalMs = options.suspectProbeIntervalMs ?? 500;
    this.openProbeIntervalMs = options.openProbeIntervalMs ?? 250;
    this.probeTimeoutMs = options.probeTimeoutMs ?? 1_000;
    pool.on('acquire', (client) => this.held.set(client, Date.now()));
    pool.on('release', (_error, client) => this.held.delete(client));
    pool.on('remove', (client) => this.held.delete(client));
    this.gate(pool);
    breakers.set(pool, this);
    this.timer = setInterval(() => this.tick(), Math.min(this.openProbeIntervalMs, 250));
    this.timer.unref();
  }

  /** Whether checkouts are refused now. */
  get isOpen(): boolean {
    return this.openSince !== null;
  }

  /** Ask the server now (a connection failed the way an unreachable server fails one). */
  suspect(): void {
    if (!this.probing) void this.probe();
  }

  /** Stops probing (the pool's owner calls it when it ends the pool). */
  close(): void {
    clearInterval(this.timer);
  }

  /**
   * Every checkout passes here, pg-pool's own `query` included (it calls `this.connect`): refused
   * at once while open; timed while it waits, and refused when the breaker opens meanwhile (a new
   * connection to a frozen server would wait out the connect timeout); a connection failure
   * makes the breaker look.
   */
  private gate(pool: pg.Pool): void {
    const connect = pool.connect.bind(pool) as (callback: ConnectCallback) => void;
    const checkout = (deliver: ConnectCallback): void => {
      if (this.openSince !== null) {
        process.nextTick(() => deliver(new DatabaseBreakerOpenError(), undefined, () => undefined));
        return;
      }
      let settled = false;
      const waiter: Waiter = {
        since: Date.now(),
        refuse: () => {
          settled = true;
          this.waiting.delete(waiter);
          deliver(new DatabaseBreakerOpenError(), undefined, () => undefined);
        },
      };
      this.waiting.add(waiter);
      connect((error, client, done) => {
        // A connection that arrives after its caller was refused goes back to the pool unused.
        if (settled) return client ? done?.() : undefined;
        settled = true;
        this.waiting.delete(waiter);
        if (error && isDatabaseUnavailable(error)) this.suspect();
        deliver(error, client, done);
      });
    };
    const gated = (callback?: ConnectCallback): Promise<pg.PoolClient> | void => {
      if (callback) return checkout(callback);
      return new Promise((resolve, reject) =>
        checkout((error, client) => (error ? reject(error) : resolve(client!))),
      );
    };
    (pool as { connect: typeof gated }).connect = gated;
  }

  private tick(): void {
    if (this.probing) return;
    const now = Date.now();
    const sinceProbe = now - this.lastProbeAt;
    if (this.openSince !== null) {
      if (sinceProbe >= this.openProbeIntervalMs) void this.probe();
      return;
    }
    if (sinceProbe < this.suspectProbeIntervalMs) return;
    const stuckSince = now - this.suspectAfterMs;
    const stuck = (started: number) => started <= stuckSince;
    if ([...this.held.values()].some(stuck) || [...this.waiting].some((waiter) => stuck(waiter.since)))
      void this.probe();
  }

  private async probe(): Promise<void> {
    this.probing = true;
    this.lastProbeAt = Date.now();
    const failure = await this.ask();
    this.probing = false;
    this.lastProbeAt = Date.now();
    if (failure === null) {
      if (this.openSince !== null) {
        this.openSince = null;
        this.options.onStateChange?.('closed');
      }
      return;
    }
    if (this.openSince !== null) return;
    this.openSince = Date.now();
    // Their statements would wait out their timeouts on a server that does not answer: failed
    // now, their requests are answered now. pg-pool drops them when they are released.
    for (const client of this.held.keys()) (client as ClientWithSocket).connection?.stream?.destroy();
    for (const waiter of [...this.waiting]) waiter.refuse();
    this.options.onStateChange?.('open', failure);
  }

  /** Null when the server answered `select 1` in time, else what went wrong. */
  private async ask(): Promise<string | null> {
    const client = new pg.Client({
      ...this.probeConfig,
      connectionTimeoutMillis: this.probeTimeoutMs,
      query_timeout: this.probeTimeoutMs,
    });
    client.on('error', () => undefined);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer to select 1 within ${this.probeTimeoutMs} ms`)),
        this.probeTimeoutMs,
      );
    });
    try {
      await Promise.race([
        (async () => {
          await client.connect();
          await client.query('select 1');
        })(),
        deadline,
      ]);
      void client.end().catch(() => undefined);
      return null;
    } catch (error) {
      // Not ended politely: on a server that does not answer, that would wait too.
      (client as unknown as ClientWithSocket).connection?.stream?.destroy();
      return error instanceof Error ? error.message : String(error);
    } finally {
      clearTimeout(timer);
    }
  }
}
