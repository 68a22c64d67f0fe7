import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { createDatabase, POOL_IDLE_TIMEOUT_MS } from './client';

afterEach(() => {
  vi.useRealTimers();
});

describe('createDatabase', () => {
  it('keeps an idle connection past pg-pool’s 10 s default, so its planned statements survive a pause between turns', async () => {
    // Only the pool's idle timer is faked; the socket and the query are real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const database = createDatabase(inject('databaseUrl'), { max: 2 });
    try {
      const first = await database.pool.query<{ pid: number }>('select pg_backend_pid() as pid');
      expect(database.pool.totalCount).toBe(1);

      vi.advanceTimersByTime(60_000);
      expect(database.pool.totalCount).toBe(1);
      const again = await database.pool.query<{ pid: number }>('select pg_backend_pid() as pid');
      expect(again.rows[0]!.pid).toBe(first.rows[0]!.pid);

      vi.advanceTimersByTime(POOL_IDLE_TIMEOUT_MS + 1);
      expect(database.pool.totalCount).toBe(0);
    } finally {
      await database.close();
    }
  });
});
