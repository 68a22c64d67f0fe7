import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '@compactor/db/testing';
import { startApiProcess, startPrivateRedis, useWorkerFleet, workerEnv } from './harness';

/**
 * SIGTERM with Redis gone (issue 9, defect 11): an unreachable Redis answers neither QUIT nor
 * BullMQ's close, and ioredis keeps reconnecting. The API hung until its 10 s force exit (code 1)
 * and the worker until it was killed; both must now stop within a bounded time, cleanly.
 */

/** What a stop may take here: the Redis waits are bounded at 1 s each, plus the process's own work. */
const STOP_WITHIN_MS = 6_000;

const database = useTestDatabase();
let redis: Awaited<ReturnType<typeof startPrivateRedis>> | undefined;
const env = () =>
  workerEnv({
    databaseUrl: database.url,
    redisUrl: redis!.url,
    prefix: '{shutdown-test}',
    llmUrl: 'http://127.0.0.1:9/v1',
  });
const fleet = useWorkerFleet(env);
afterAll(async () => {
  await redis?.stop();
});

/** Sends SIGTERM and resolves with the exit code and how long the process took to exit. */
async function terminate(child: ChildProcess): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const code = await Promise.race([exited, sleep(15_000).then(() => 'timeout' as const)]);
  if (code === 'timeout') {
    child.kill('SIGKILL');
    return { code: null, ms: Date.now() - started };
  }
  return { code, ms: Date.now() - started };
}

describe('SIGTERM while Redis is unreachable', () => {
  it('the worker stops within a bounded time and exits 0', async () => {
    redis = await startPrivateRedis();
    const worker = await fleet.spawn();
    await redis.stop();
    await sleep(300); // ioredis notices and starts reconnecting
    worker.killedBy = 'SIGTERM';
    const { code, ms } = await terminate(worker.child);
    expect(code, worker.log.tail(20).join('\n')).toBe(0);
    expect(ms).toBeLessThan(STOP_WITHIN_MS);
  });

  it('the API stops within a bounded time and exits 0', async () => {
    redis = await startPrivateRedis();
    const api = await startApiProcess({
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: '{shutdown-test}',
      LOG_LEVEL: 'warn',
    });
    try {
      await redis.stop();
      await sleep(300);
      const { code, ms } = await terminate(api.child);
      expect(code, api.output()).toBe(0);
      expect(ms).toBeLessThan(STOP_WITHIN_MS);
    } finally {
      if (api.child.exitCode === null) api.child.kill('SIGKILL');
    }
  });
});
