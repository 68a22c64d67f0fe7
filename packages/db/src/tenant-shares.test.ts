import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import { defaultReserve, runAsTenant, shareByTenant } from './tenant-shares';

type Done = (error?: Error | boolean) => void;
type Callback = (error: Error | undefined, client?: pg.PoolClient, done?: Done) => void;

/**
 * A pool that hands out a fresh client on every checkout, or fails it when told to: what the
 * shares decide is who asks the pool next, which `asked` records.
 */
function fakePool(options: { failNext?: () => boolean } = {}) {
  const asked: string[] = [];
  const pool = {
    connect(callback: Callback) {
      if (options.failNext?.()) return callback(new Error('connection refused'));
      let released = false;
      const client = {} as pg.PoolClient;
      const done: Done = () => {
        if (released)
          throw new Error('Release called on client which has already been released to the pool.');
        released = true;
      };
      client.release = done;
      callback(undefined, client, done);
    },
  };
  return { pool: pool as unknown as pg.Pool, asked };
}

const checkout = (pool: pg.Pool, tenant: string, order: string[], label = tenant) =>
  runAsTenant(tenant, () =>
    pool.connect().then((client) => {
      order.push(label);
      return client;
    }),
  );

describe('shareByTenant', () => {
  it('gives a released connection to the waiting tenant holding fewest, not to the longest backlog', async () => {
    const { pool } = fakePool();
    shareByTenant(pool, 2, 0);
    const order: string[] = [];
    const held = [await checkout(pool, 'a', order), await checkout(pool, 'a', order)];
    const backlog = [1, 2, 3].map((n) => checkout(pool, 'a', order, `a${n}`));
    const other = checkout(pool, 'b', order);
    held[0]!.release();
    await other;
    expect(order).toEqual(['a', 'a', 'b']);
    // Then A's backlog, in its order, as connections come back.
    held[1]!.release();
    (await other).release();
    await Promise.all(backlog.slice(0, 2));
    expect(order).toEqual(['a', 'a', 'b', 'a1', 'a2']);
  });

  it('takes a free connection at once, and a second release still fails as the pool makes it fail', async () => {
    const { pool } = fakePool();
    shareByTenant(pool, 1, 0);
    const client = await checkout(pool, 'a', []);
    client.release();
    expect(() => client.release()).toThrow(/already been released/);
    // The permit came back once: one checkout gets it at once, the next waits.
    const order: string[] = [];
    const first = await checkout(pool, 'a', order, 'first');
    const second = checkout(pool, 'a', order, 'second');
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first']);
    first.release();
    await second;
    expect(order).toEqual(['first', 'second']);
  });

  it('hands the permit on when a checkout fails, and fails a wait that outlasts the timeout', async () => {
    let fail = false;
    const { pool } = fakePool({ failNext: () => fail });
    shareByTenant(pool, 1, 50);
    const held = await checkout(pool, 'a', []);
    const waiting = checkout(pool, 'b', []);
    await expect(waiting).rejects.toThrow(/timeout exceeded when trying to connect/);
    fail = true;
    held.release();
    await expect(checkout(pool, 'b', [])).rejects.toThrow(/connection refused/);
    fail = false;
    await expect(checkout(pool, 'c', [])).resolves.toBeDefined();
  });

  it('keeps the reserve from a tenant holding all it may, for the next tenant, with permits free', async () => {
    const { pool } = fakePool();
    shareByTenant(pool, 3, 0, 1);
    const order: string[] = [];
    const held = [await checkout(pool, 'a', order), await checkout(pool, 'a', order)];
    const third = checkout(pool, 'a', order, 'a3');
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['a', 'a']); // a permit is free, but not to A
    (await checkout(pool, 'b', order)).release();
    expect(order).toEqual(['a', 'a', 'b']);
    // A's own release makes room for A's waiting checkout.
    held[0]!.release();
    await third;
    expect(order).toEqual(['a', 'a', 'b', 'a3']);
  });

  it('keeps a fifth of the pool by default, none below five', () => {
    expect([2, 4, 5, 10, 20].map((permits) => defaultReserve(permits))).toEqual([0, 0, 1, 2, 4]);
  });
});
