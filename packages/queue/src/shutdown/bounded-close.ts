import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../redis/connect';

/**
 * How long a shutdown waits for one Redis client (or anything closing over Redis: BullMQ
 * queues, the event subscriber) before it stops waiting. An unreachable Redis never answers
 * QUIT, and ioredis keeps reconnecting: without a bound, SIGTERM hung until a force exit.
 */
export const REDIS_CLOSE_TIMEOUT_MS = 1_000;

/** Waits for `closing` at most `ms`; returns whether it finished in time. Never rejects. */
export async function settleWithin(closing: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      closing.then(
        () => true,
        () => true,
      ),
      sleep(ms, false, { signal: timer.signal }).catch(() => false),
    ]);
  } finally {
    timer.abort();
  }
}

/** QUIT when Redis answers in time, else drop the connection (and stop reconnecting). */
export async function closeRedis(redis: RedisClient, ms = REDIS_CLOSE_TIMEOUT_MS): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready' || !(await settleWithin(redis.quit(), ms))) redis.disconnect(false);
}
