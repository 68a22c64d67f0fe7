import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionRow } from '@compactor/db';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { startCompaction } from '@compactor/queue';
import { useTestDatabase } from '@compactor/testing';
import { generateCodingSession } from '@compactor/testing/fixtures';
import {
  compactionStates,
  createRequester,
  jobPolicy,
  seedSession,
  stableContext,
  startPrivateRedis,
  summaryMessageCounts,
  uniqueHashTaggedPrefix,
  useWorkerFleet,
  waitForTerminal,
  workerEnv,
  type Requester,
} from './harness';

/**
 * Redis loses everything (FLUSHALL) while compactions wait and run. Postgres is the system of
 * record: the reconciler re-enqueues every compaction whose job vanished and all complete.
 * A PRIVATE redis-server: other test files share the global one.
 */

const COMPACTIONS = 20;
const ATTEMPTS = 5;
const BACKOFF_MS = 50;

const database = useTestDatabase();
const prefix = uniqueHashTaggedPrefix('rel-flush');
let redis: Awaited<ReturnType<typeof startPrivateRedis>> | undefined;
let stub: LlmStub | undefined;
let requester: Requester | undefined;
const fleet = useWorkerFleet(() =>
  workerEnv({
    databaseUrl: database.url,
    redisUrl: redis!.url,
    prefix,
    llmUrl: stub!.url,
    WORKER_CONCURRENCY: '4',
    JOB_ATTEMPTS: String(ATTEMPTS),
    JOB_BACKOFF_MS: String(BACKOFF_MS),
    // `re-enqueued compaction` is logged at info: the evidence that the reconciler did the recovery.
    LOG_LEVEL: 'info',
  }),
);

beforeAll(async () => {
  redis = await startPrivateRedis();
  stub = await startLlmStub();
  requester = createRequester(database.db, redis.url, prefix, jobPolicy(ATTEMPTS, BACKOFF_MS));
});

afterAll(async () => {
  await fleet.killAll();
  await requester?.close({ obliterate: false });
  await stub?.close();
  await redis?.stop();
});

describe('Redis FLUSHALL mid-run', () => {
  it('re-enqueues every lost job from Postgres and completes every compaction', async () => {
    const db = database.db;
    // Slow summaries: the flush finds compactions waiting in the queue and others mid-summary.
    stub!.setFaults({ latencyMs: 1_500 });
    const sessions: SessionRow[] = [];
    for (let i = 0; i < COMPACTIONS; i++) {
      sessions.push(await seedSession(db, generateCodingSession({ turns: 3 + (i % 2), seed: 100 + i })));
    }
    await fleet.spawnMany(2);
    const requested = await Promise.all(
      sessions.map((s) => startCompaction(requester!.deps, s, { reason: 'manual' })),
    );
    const ids = requested.map((r) => r.compaction.id);

    // Wait until some compactions run (LLM calls in flight) while the rest wait in the queue.
    await expect
      .poll(async () => (await compactionStates(db, ids)).filter((r) => r.status === 'running').length, {
        timeout: 20_000,
        interval: 50,
      })
      .toBeGreaterThanOrEqual(4);
    const client = new Redis(redis!.url);
    await client.flushall();
    const keysAfterFlush = await client.dbsize();
    const atFlush = await compactionStates(db, ids);
    await client.quit();
    expect(keysAfterFlush).toBe(0);
    const open = atFlush.filter((r) => r.status === 'pending' || r.status === 'running');
    const pendingAtFlush = atFlush.filter((r) => r.status === 'pending').map((r) => r.id);
    expect(pendingAtFlush.length, 'compactions waiting in the queue at the flush').toBeGreaterThan(0);

    const rows = await waitForTerminal(db, ids, 60_000);
    for (const row of rows) {
      expect(row, row.id).toMatchObject({ status: 'completed', error_code: null });
      expect(row.details.writtenBy, row.id).toBe('llm');
    }
    const summaries = await summaryMessageCounts(db);
    for (const row of rows) {
      expect(summaries.get(row.id), row.id).toEqual({
        total: row.summary_message_ids.length,
        summaryText: 1,
      });
    }
    for (const session of sessions) {
      const view = await stableContext(db, session.pk);
      expect(view.problems, session.id).toEqual([]);
      expect(view.state).toBe('compacted');
    }

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
    expect(fleet.diedOnTheirOwn.map((h) => h.id)).toEqual([]);
  }, 90_000);
});
