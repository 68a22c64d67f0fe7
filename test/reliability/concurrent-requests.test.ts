import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { findSessionByPk } from '@compactor/db';
import { startCompaction } from '@compactor/queue';
import { generateCodingSession } from '@compactor/testing/fixtures';
import {
  expectNoWorkerDiedOnItsOwn,
  expectSummaryStored,
  seedSession,
  summaryMessageCounts,
  useReliabilityRig,
  waitForTerminal,
} from './harness';

/**
 * 20 identical requests for one session at the same moment, each on its own connection, as 20
 * API replicas would send them: one compaction row, one outbox entry, one job; it runs once.
 */

const REQUESTS = 20;

/** The requester's pool is as large as the burst, so the 20 transactions really run side by side. */
const rig = useReliabilityRig({
  label: 'rel-concurrent',
  requesterPool: REQUESTS + 2,
});
const { database, fleet } = rig;

async function burst(sessionPk: number) {
  const wide = rig.requesterDb;
  const session = await findSessionByPk(wide, sessionPk);
  if (!session) throw new Error(`session ${sessionPk} not found`);
  // Warm the pool so every request gets its own connection at once.
  await Promise.all(Array.from({ length: REQUESTS }, () => wide.execute(sql`select 1`)));
  return Promise.all(
    Array.from({ length: REQUESTS }, () =>
      startCompaction(rig.requester.deps, session, { reason: 'manual' }),
    ),
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
    const queue = rig.requester.queues.queue('compact');
    const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed']);
    expect(jobs.map((j) => j.id)).toEqual([id]);

    await fleet.spawn();
    const [done] = await waitForTerminal(db, [id], 30_000);
    expect(done).toMatchObject({ status: 'completed', attempts: 1, error_code: null });
    expectSummaryStored(await summaryMessageCounts(db), done!);
    const finalizes = await db.execute<{ status: string }>(
      sql`select status from compaction_steps where compaction_id = ${id} and step = 'finalize'`,
    );
    expect(finalizes.rows.map((r) => r.status)).toEqual(['completed']);
    // BullMQ marks the job completed just after the processor returned (the row is written first).
    await expect.poll(async () => (await queue.getJob(id))?.getState(), { timeout: 5_000 }).toBe('completed');
    expect(await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
      prioritized: 0,
      failed: 0,
    });

    // Once it finished, the next burst starts exactly one new compaction. The queue is paused
    // meanwhile: a worker could otherwise run the new one to its end (skipped: nothing new to
    // compact) before the burst's last request, which would then rightly start another.
    await queue.pause();
    const again = await burst(session.pk);
    await queue.resume();
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
    expectNoWorkerDiedOnItsOwn(fleet);
  }, 60_000);
});
