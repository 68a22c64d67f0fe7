/**
 * A worker told to stop while Redis is down or frozen exits within its drain bound (it used to
 * hang for minutes: closing BullMQ's workers waits on a Redis that never answers), and every
 * line it writes, before, during and after the outage, is one JSON log line (no raw stack traces
 * from the Redis client). The outage is a TCP proxy in front of the shared Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '@compactor/testing';
import { sharedRedisUrl, useReliabilityRig, type WorkerHandle } from './harness';

const SHUTDOWN_TIMEOUT_MS = 2_000;
/** Generous: the drain bound plus Redis close bounds, on a busy machine. */
const EXIT_DEADLINE_MS = 60_000;
let proxy: TcpProxy;
let proxyUrl = '';

const rig = useReliabilityRig({
  label: 'rel-stop-redis-down',
  workerEnv: {
    get REDIS_URL() {
      return proxyUrl;
    },
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
  },
});

beforeAll(async () => {
  const shared = new URL(sharedRedisUrl());
  proxy = await startTcpProxy({ host: shared.hostname, port: Number(shared.port || 6379) });
  proxyUrl = `redis://127.0.0.1:${proxy.port}`;
});

afterAll(async () => {
  await proxy?.resume();
  await proxy?.close();
});

/** Waits for the worker to exit, or for the deadline: whichever comes first. */
async function exitWithin(worker: WorkerHandle, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const exited = await Promise.race([
    worker.exited.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return exited;
}

function nonJsonLines(worker: WorkerHandle): string[] {
  return worker.log.lines
    .map((l) => l.line)
    .filter((line) => {
      if (line.trim() === '') return false;
      try {
        return typeof JSON.parse(line) !== 'object';
      } catch {
        return true;
      }
    });
}

describe('a worker stopped while Redis is unreachable', () => {
  it(
    'exits on SIGTERM when Redis was down from its start, logging only JSON',
    { timeout: EXIT_DEADLINE_MS + 30_000 },
    async () => {
      await proxy.stop();
      const worker = await rig.fleet.spawn();
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await rig.fleet.kill(worker, 'SIGTERM');
      const exited = await exitWithin(worker, EXIT_DEADLINE_MS);
      await proxy.resume();
      expect(exited, rig.fleet.diagnostics()).toBe(true);
      expect(nonJsonLines(worker), rig.fleet.diagnostics()).toEqual([]);
    },
  );

  it.each(['stopped', 'frozen'] as const)(
    'exits on SIGTERM within its drain bound when Redis is %s, logging only JSON',
    { timeout: EXIT_DEADLINE_MS + 30_000 },
    async (outage) => {
      const worker = await rig.fleet.spawn();
      if (outage === 'stopped') await proxy.stop();
      else proxy.freeze();
      // Let the clients notice: reconnect attempts, failed commands.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await rig.fleet.kill(worker, 'SIGTERM');
      const exited = await exitWithin(worker, EXIT_DEADLINE_MS);
      await proxy.resume();
      expect(exited, rig.fleet.diagnostics()).toBe(true);
      expect(worker.exit?.code, rig.fleet.diagnostics()).toBe(0);
      expect(nonJsonLines(worker), rig.fleet.diagnostics()).toEqual([]);
    },
  );
});
