import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  compactionStates,
  expectAllCompletedByLlm,
  expectNoWorkerDiedOnItsOwn,
  useReliabilityRig,
  waitForRunning,
  waitForTerminal,
} from './harness';

/**
 * Redis loses everything (FLUSHALL) while compactions wait and run. Postgres is the system of
 * record: the reconciler re-enqueues every compaction whose job vanished and all complete.
 * A PRIVATE redis-server: other test files share the global one.
 */

const COMPACTIONS = 20;

const rig = useReliabilityRig({
  label: 'rel-flush',
  privateRedis: true,
  workerEnv: {
    WORKER_CONCURRENCY: '4',
    // `re-enqueued compaction` is logged at info: the evidence that the reconciler did the recovery.
    LOG_LEVEL: 'info',
  },
  obliterateQueues: false,
});
const { database, fleet } = rig;

describe('Redis FLUSHALL mid-run', () => {
  it('re-enqueues every lost job from Postgres and completes every compaction', async () => {
    const db = database.db;
    // Slow summaries: the flush finds compactions waiting in the queue and others mid-summary.
    rig.stub.setFaults({ latencyMs: 1_500 });
    const { sessions, ids } = await rig.compactCodingSessions({
      count: COMPACTIONS,
      firstSeed: 100,
      workers: 2,
    });

    // Wait until some compactions run (LLM calls in flight) while the rest wait in the queue.
    await waitForRunning(db, ids, 4, 50);
    const client = new Redis(rig.redisUrl);
    // One transaction: the workers keep writing (locks, events), so a DBSIZE sent after the
    // FLUSHALL could already count a new key. Inside MULTI nothing runs between the two.
    const flushed = await client.multi().flushall().dbsize().exec();
    const atFlush = await compactionStates(db, ids);
    await client.quit();
    expect(flushed).toEqual([
      [null, 'OK'],
      [null, 0],
    ]);
    const open = atFlush.filter((r) => r.status === 'pending' || r.status === 'running');
    const pendingAtFlush = atFlush.filter((r) => r.status === 'pending').map((r) => r.id);
    expect(pendingAtFlush.length, 'compactions waiting in the queue at the flush').toBeGreaterThan(0);

    const rows = await waitForTerminal(db, ids, 60_000);
    await expectAllCompletedByLlm(db, rows, sessions);

    // Their jobs were gone: only the reconciler can have run the compactions that still waited.
    const reenqueued = new Set(
      fleet
        .jsonLogs()
        .filter((l) => l.msg === 're-enqueued compaction')
        .map((l) => String(l.compactionId)),
    );
    expect(
      pendingAtFlush.filter((id) => !reenqueued.has(id)),
      'waiting compactions not re-enqueued',
    ).toEqual([]);
    console.info(
      `redis flush: ${open.length} compactions active at the flush (${pendingAtFlush.length} waiting), ` +
        `${reenqueued.size} re-enqueued by the reconciler, all completed`,
    );
    expectNoWorkerDiedOnItsOwn(fleet);
  }, 90_000);
});
