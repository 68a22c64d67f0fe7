import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, findSessionByPk, type Database } from '@compactor/db';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { startCompaction } from '@compactor/queue';
import { useTestDatabase } from '@compactor/testing';
import { generateCodingSession } from '@compactor/testing/fixtures';
import {
  createRequester,
  jobPolicy,
  seedSession,
  sharedRedisUrl,
  summaryMessageCounts,
  uniqueHashTaggedPrefix,
  useWorkerFleet,
  waitForTerminal,
  workerEnv,
  type Requester,
} from './harness';

/**
 * 20 identical requests for one session at the same moment, each on its own connection, as 20
 * API replicas would send them: one compaction row, one outbox entry, one job; it runs once.
 */

const REQUESTS = 20;
const ATTEMPTS = 5;
const BACKOFF_MS = 50;

const database = useTestDatabase();
const prefix = uniqueHashTaggedPrefix('rel-concurrent');
let stub: LlmStub | undefined;
let requester: Requester | undefined;
/** A pool as large as the burst, so the 20 transactions really run side by side. */
let wide: Database | undefined;
const fleet = useWorkerFleet(() =>
  workerEnv({
    databaseUrl: database.url,
    redisUrl: sharedRedisUrl(),
    prefix,
    llmUrl: stub!.url,
    JOB_ATTEMPTS: String(ATTEMPTS),
    JOB_BACKOFF_MS: String(BACKOFF_MS),
  }),
);

beforeAll(async () => {
  stub = await startLlmStub();
  wide = createDatabase(database.url, { max: REQUESTS + 2, applicationName: 'compactor-test' });
  requester = createRequester(wide.db, sharedRedisUrl(), prefix, jobPolicy(ATTEMPTS, BACKOFF_MS));
});

afterAll(async () => {
  await fleet.killAll();
  await requester?.close();
  await wide?.close();
  await stub?.close();
});

async function burst(sessionPk: number) {
  const session = await findSessionByPk(wide!.db, sessionPk);
  if (!session) throw new Error(`session ${sessionPk} not found`);
  // Warm the pool so every request gets its own connection at once.
  await Promise.all(Array.from({ length: REQUESTS }, () => wide!.db.execute(sql`select 1`)));
  return Promise.all(
    Array.from({ length: REQUESTS }, () => startCompaction(requester!.deps, session, { reason: 'manual' })),
  );
}

describe(`${REQUESTS} concurrent identical compaction requests`, () => {
  it('create one compaction and one job, which completes once', async () => {
    const db = database.db;
    const session = await seedSession(db, generateCodingSession({ turns: 4, seed: 300 }));

    const results = await burst(session.pk);
    const created = results.filter((r) => r.created);
    expect(created).toHaveLength(1);
    const id = created[0]!.compaction.id;
    expect(new Set(results.map((r) => r.compaction.id))).toEqual(new Set([id]));

    const rows = await db.execute<{ id: string }>(
      sql`select id from compactions where session_pk = ${session.pk}`,
    );
    expect(rows.rows.map((r) => r.id)).toEqual([id]);
    const outbox = await db.execute<{ job_id: string }>(
      sql`select job_id from outbox where job_name = 'compact'`,
    );
    expect(outbox.rows.map((r) => r.job_id)).toEqual([id]);
    // No worker runs yet: the queue holds exactly the one job, under the compaction's id.
    const queue = requester!.queues.queue('compact');
    const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed']);
    expect(jobs.map((j) => j.id)).toEqual([id]);

    await fleet.spawn();
    const [done] = await waitForTerminal(db, [id], 30_000);
    expect(done).toMatchObject({ status: 'completed', attempts: 1, error_code: null });
    expect((await summaryMessageCounts(db)).get(id)).toEqual({
      total: done!.summary_message_ids.length,
      summaryText: 1,
    });
    const finalizes = await db.execute<{ status: string }>(
      sql`select status from compaction_steps where compaction_id = ${id} and step = 'finalize'`,
    );
    expect(finalizes.rows.map((r) => r.status)).toEqual(['completed']);
    expect(await (await queue.getJob(id))?.getState()).toBe('completed');
    expect(await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
      prioritized: 0,
      failed: 0,
    });

    // Once it finished, the next burst starts exactly one new compaction.
    const again = await burst(session.pk);
    const next = again.filter((r) => r.created);
    expect(next).toHaveLength(1);
    expect(next[0]!.compaction.id).not.toBe(id);
    expect(new Set(again.map((r) => r.compaction.id))).toEqual(new Set([next[0]!.compaction.id]));
    const [second] = await waitForTerminal(db, [next[0]!.compaction.id], 30_000);
    expect(second!.status === 'completed' || second!.status === 'skipped', second!.status).toBe(true);
    const all = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from compactions where session_pk = ${session.pk}`,
    );
    expect(all.rows[0]!.n).toBe(2);
    expect(fleet.diedOnTheirOwn.map((h) => h.id)).toEqual([]);
  }, 60_000);
});
