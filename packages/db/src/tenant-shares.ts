import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';

/**
 * The tenant whose work is running, for the pool's checkouts. An async context rather than a
 * parameter: every query function takes a `Db` and would otherwise need a per-request handle;
 * the context follows a request's work through its awaits, the per-session write queue
 * included (a queued write runs in the context of the request that queued it).
 */
const checkoutTenant = new AsyncLocalStorage<string>();

/** Runs `work` (and everything it starts) with its checkouts counted as `tenant`'s. */
export function runAsTenant<T>(tenant: string, work: () => T): T {
  return checkoutTenant.run(tenant, work);
}

/** Checkouts made outside any tenant's work (auth lookups, probes) share this one turn. */
const UNATTRIBUTED = '';

/**
 * Connections kept from any one tenant when no reserve is given: a fifth of the pool (2 of the
 * default 10), none below five, where one connection more for the busy tenant counts more.
 */
export const defaultReserve = (permits: number) => Math.floor(permits / 5);

/** pg-pool's own message, so that `isDatabaseUnavailable` classifies a wait that ran out alike. */
const WAIT_TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';

type Release = (error?: Error | boolean) => void;
type ConnectCallback = (error: Error | undefined, client?: pg.PoolClient, done?: Release) => void;

/**
 * Fair turns at a pool: at most `permits` checkouts held at once (the pool's size, so the pool
 * itself never queues), and when every one is held, a connection coming back goes to the waiting
 * tenant that holds the fewest now (ties in turn, round-robin), each tenant's checkouts in
 * arrival order. So a tenant with little in flight waits for one release, never behind another
 * tenant's backlog, which a first-come-first-served pool makes it wait out whole.
 *
 * Alone, a tenant gets what the pool gave it: a free permit is taken at once (a counter, a map
 * entry and a closure), and its waiters are served in arrival order. Only tenants holding or
 * waiting for a connection have entries, so what is kept is bounded by the pool's size and the
 * waiting checkouts, however many tenants there are. A checkout that waits longer than
 * `waitTimeoutMs` fails as pg-pool's own wait does.
 *
 * No tenant holds more than `permits - reserve` at once: past that its checkouts wait even with
 * permits free, so statements of one tenant that run long (a lock, a large append) still leave
 * `reserve` connections to the others.
 *
 * It wraps `pool.connect` as the database breaker does, after it: a checkout it admits is
 * refused by an open breaker at once, and the permit goes on to the next waiter.
 */
export function shareByTenant(
  pool: pg.Pool,
  permits: number,
  waitTimeoutMs: number,
  reserve = defaultReserve(permits),
): void {
  /** What one tenant may hold: the rest is kept for the others, however long its statements run. */
  const most = Math.max(1, permits - reserve);
  const connect = pool.connect.bind(pool) as (callback: ConnectCallback) => void;
  /** Waiting checkouts by tenant; the map's order is the turn (a tenant served goes to the back). */
  const queues = new Map<string, Array<() => void>>();
  /** Connections (or checkouts under way) each tenant holds. */
  const held = new Map<string, number>();
  let free = permits;

  const hold = (tenant: string, change: 1 | -1): void => {
    const count = (held.get(tenant) ?? 0) + change;
    if (count > 0) held.set(tenant, count);
    else held.delete(tenant);
  };

  /**
   * A permit came back: the waiting tenant holding fewest (and fewer than `most`) takes it, and
   * goes to the back of the turn.
   */
  const handOn = (): void => {
    let next: string | undefined;
    let fewest = most;
    for (const tenant of queues.keys()) {
      const count = held.get(tenant) ?? 0;
      if (count < fewest) [next, fewest] = [tenant, count];
      if (count === 0) break;
    }
    if (next === undefined) {
      free++;
      return;
    }
    const queue = queues.get(next)!;
    const admit = queue.shift()!;
    queues.delete(next);
    if (queue.length > 0) queues.set(next, queue);
    admit();
  };

  /** Checks out with a permit held; the permit returns when the client does (or the checkout fails). */
  const take = (tenant: string, deliver: ConnectCallback): void => {
    hold(tenant, 1);
    connect((error, client, done) => {
      if (error || !client || !done) {
        hold(tenant, -1);
        handOn();
        return deliver(error, client, done);
      }
      let holding = true;
      const release: Release = (releaseError) => {
        if (!holding) return done(releaseError); // pg-pool's own answer to a second release
        holding = false;
        done(releaseError);
        hold(tenant, -1);
        handOn();
      };
      client.release = release;
      deliver(undefined, client, release);
    });
  };

  const wait = (tenant: string, deliver: ConnectCallback): void => {
    const admit = () => {
      clearTimeout(timer);
      take(tenant, deliver);
    };
    const queue = queues.get(tenant);
    if (queue) queue.push(admit);
    else queues.set(tenant, [admit]);
    const giveUp = () => {
      const mine = queues.get(tenant);
      const at = mine?.indexOf(admit) ?? -1;
      if (at < 0) return;
      mine!.splice(at, 1);
      if (mine!.length === 0) queues.delete(tenant);
      deliver(new Error(WAIT_TIMEOUT_MESSAGE));
    };
    // Admitted only after this returns (a release hands on later), so `admit` finds it set.
    const timer = waitTimeoutMs > 0 ? setTimeout(giveUp, waitTimeoutMs) : undefined;
  };

  const checkout = (deliver: ConnectCallback): void => {
    const tenant = checkoutTenant.getStore() ?? UNATTRIBUTED;
    // A tenant below its most never waits while a permit is free: waiting checkouts are either
    // short of a permit or of their tenant's room, and a release hands on to whichever it frees.
    if (free > 0 && (held.get(tenant) ?? 0) < most) {
      free--;
      return take(tenant, deliver);
    }
    wait(tenant, deliver);
  };

  const gated = (callback?: ConnectCallback): Promise<pg.PoolClient> | void => {
    if (callback) return checkout(callback);
    return new Promise((resolve, reject) =>
      checkout((error, client) => (error ? reject(error) : resolve(client!))),
    );
  };
  (pool as { connect: typeof gated }).connect = gated;
}
