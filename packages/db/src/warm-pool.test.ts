/**
 * A pool opened with `keepWarm`: `openAll` opens every connection, none closes for idling, and
 * the idle connection that waited longest is handed out first, so ordinary traffic runs its
 * statements on every connection (pg-pool alone reuses the most recent one, and leaves the others
 * cold for the burst that needs them).
 */
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { createDatabase, POOL_IDLE_TIMEOUT_MS, type Database } from './client';

const backendOf = async (database: Database) =>
  (await database.pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;

afterEach(() => {
  vi.useRealTimers();
});

describe('a pool kept warm', () => {
  it('opens all its connections at once and keeps them past the idle timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const database = createDatabase(inject('databaseUrl'), { max: 3, keepWarm: true });
    try {
      await database.openAll();
      expect([database.pool.totalCount, database.pool.idleCount]).toEqual([3, 3]);
      vi.advanceTimersByTime(POOL_IDLE_TIMEOUT_MS + 1);
      expect(database.pool.totalCount).toBe(3);
    } finally {
      await database.close();
    }
  });

  it('hands out the connection that idled longest, so one query after another uses each in turn', async () => {
    const database = createDatabase(inject('databaseUrl'), { max: 3, keepWarm: true });
    try {
      await database.openAll();
      const backends: number[] = [];
      for (let i = 0; i < 6; i++) backends.push(await backendOf(database));
      expect(new Set(backends.slice(0, 3)).size).toBe(3);
      expect(backends.slice(3)).toEqual(backends.slice(0, 3));
    } finally {
      await database.close();
    }
  });

  it('without it, reuses the most recent connection and lets the others idle', async () => {
    const database = createDatabase(inject('databaseUrl'), { max: 3 });
    try {
      await database.openAll();
      const backends: number[] = [];
      for (let i = 0; i < 4; i++) backends.push(await backendOf(database));
      expect(new Set(backends).size).toBe(1);
    } finally {
      await database.close();
    }
  });

  it("opens every connection beneath the breaker and the tenants' shares, which would hold some back", async () => {
    const database = createDatabase(inject('databaseUrl'), {
      max: 5,
      keepWarm: true,
      breaker: true,
      tenantShares: true,
    });
    try {
      await database.openAll();
      expect(database.pool.totalCount).toBe(5);
      // The shares count nothing for it: a tenant still gets its connections at once.
      expect(await backendOf(database)).toBeGreaterThan(0);
    } finally {
      await database.close();
    }
  });
});
