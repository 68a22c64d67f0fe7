import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '@compactor/workflow';
import { closeRedis, createRedis, redisEventSource } from '@compactor/queue';
import { expectNoWorkerDiedOnItsOwn, useReliabilityRig, waitForTerminal } from './harness';

/**
 * Compactor on a Redis Cluster (issue 10): three masters on loopback, REDIS_URL in its
 * `redis-cluster://` form. Workers take the jobs, events reach a subscriber, and every queue key
 * sits in the one slot the hash-tagged prefix names (BullMQ's Lua scripts need that).
 */
const rig = useReliabilityRig({ label: 'rel-cluster', redisCluster: true });

describe('Redis Cluster', () => {
  it('runs compactions through queues on a three-master cluster, keys in one slot, events delivered', async () => {
    const subscriber = createRedis(rig.redisUrl, { maxRetriesPerRequest: null });
    const events = redisEventSource(subscriber, rig.prefix);
    const seen: SessionEvent[] = [];
    try {
      const { sessions, ids } = await rig.compactCodingSessions({ count: 12, firstSeed: 1, workers: 0 });
      for (const s of sessions) await events.subscribe(s.pk, (e) => seen.push(e));
      await rig.fleet.spawnMany(2);
      const rows = await waitForTerminal(rig.database.db, ids, 60_000);
      for (const row of rows) expect(row, row.id).toMatchObject({ status: 'completed' });
      await expect
        .poll(
          () =>
            new Set(seen.filter((e) => e.type === 'compaction.completed').map((e) => e.compactionId)).size,
        )
        .toBe(ids.length);
      expectNoWorkerDiedOnItsOwn(rig.fleet, 'workers that died');

      // Every key of the queues is on one node, in one slot.
      const ports = rig.redisUrl
        .replace('redis-cluster://', '')
        .split(',')
        .map((a) => Number(a.split(':')[1]));
      const keysByNode = await Promise.all(
        ports.map(async (port) => {
          const node = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
          try {
            await node.connect();
            return await node.keys(`${rig.prefix}*`);
          } finally {
            node.disconnect();
          }
        }),
      );
      const withKeys = keysByNode.filter((keys) => keys.length > 0);
      expect(withKeys).toHaveLength(1);
      const probe = new Redis({ port: ports[0]!, host: '127.0.0.1' });
      try {
        const slots = new Set(await Promise.all(withKeys[0]!.map((key) => probe.cluster('KEYSLOT', key))));
        expect(slots.size).toBe(1);
      } finally {
        probe.disconnect();
      }
    } finally {
      await events.close();
      await closeRedis(subscriber);
    }
  });
});
